package durable

import (
	"os"

	"golang.org/x/sys/unix"
)

// StartWriteback asks the kernel to begin writing n bytes of f from off to disk without
// waiting for them. A large file written this way in steps is mostly on disk by the
// time it is synced, so the sync that makes it durable waits for its tail only, and the
// disk works while the file is still being written. Errors are left to that sync.
func StartWriteback(f *os.File, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}
