//go:build !linux

package durable

import "errors"

// CanSyncFS is false where there is no syncfs(2): callers sync each file and directory.
const CanSyncFS = false

// SyncFS is not available here.
func SyncFS(string) error {
	return errors.New("flushing a whole file system is not available on this system")
}
