//go:build !unix

package storage

import "io/fs"

func fileSystemOf(fs.FileInfo) (uint64, bool) { return 0, false }

// linkable is false: without a file's owner and link count, every body is copied.
func (l *Local) linkable(fs.FileInfo) bool { return false }
