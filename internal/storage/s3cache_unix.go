//go:build unix

package storage

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockDir opens dir and takes an exclusive lock on it, held as long as the returned file
// stays open; nil when it cannot.
func lockDir(dir string) *os.File {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil
	}
	return f
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
		if f := lockDir(p); f != nil {
			os.RemoveAll(p)
			f.Close()
		}
	}
}
