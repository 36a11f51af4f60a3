package durable

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// CanSyncFS tells whether SyncFS works here. One syncfs(2) makes every write and rename on
// the file system durable, so a batch of files can share one flush instead of syncing
// each file and directory.
const CanSyncFS = true

// SyncFS flushes the file system holding dir and reports write-back errors since the
// last flush.
func SyncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("flush file system of %s: %w", dir, err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("flush file system of %s: %w", dir, err)
	}
	return nil
}
