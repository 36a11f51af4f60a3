package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// canSyncFS tells that syncFS is available: one syncfs(2) makes every write and rename
// on the file system durable, so a group of deliveries shares one flush instead of
// syncing each file and directory.
const canSyncFS = true

// syncFS flushes the file system holding dir and reports any write-back error since the
// last flush.
func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
