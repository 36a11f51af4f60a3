//go:build !linux

package file

import "errors"

// canSyncFS is false where there is no syncfs(2): every file and directory is synced on
// its own.
const canSyncFS = false

func syncFS(string) error { return errors.New("syncfs is not available on this system") }
