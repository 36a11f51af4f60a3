package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

const canSyncFS = true

// syncFS flushes the file system holding dir, reporting write-back errors.
func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
