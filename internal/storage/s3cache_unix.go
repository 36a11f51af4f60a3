//go:build unix

package storage

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockDir opens dir and takes an exclusive lock on it, held as long as the returned file
// stays open; it fails when another process holds it.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "lock", Path: dir, Err: err}
	}
	return f, nil
}

// removeUnlockedCaches removes the cache directories below dir whose processes ended:
// those nobody holds the lock of.
func removeUnlockedCaches(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			os.Remove(p)
			continue
		}
		if f, err := lockDir(p); err == nil {
			os.RemoveAll(p)
			f.Close()
		}
	}
}
