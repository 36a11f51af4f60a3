// Package durable holds the few file-system calls that make writes survive a power cut:
// syncing a directory after a rename, and flushing a whole file system at once where the
// system can.
package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"syscall"
)

// SyncDir makes the entries of dir (names created, renamed or removed in it) durable.
// Where a directory cannot be synced (Windows, some file systems) it does nothing: the
// rename stands on its own there.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, fs.ErrPermission) {
			return nil
		}
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// SyncFile makes the bytes of the file at p durable.
func SyncFile(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
