//go:build unix

package storage

import (
	"io/fs"
	"os"
	"syscall"
)

// fileSystemOf identifies the file system a file is on.
func fileSystemOf(info fs.FileInfo) (uint64, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true
}

// linkable reports whether a file may become a blob by a hard link: on the store's file
// system, with no other name, and this process's user's.
func (l *Local) linkable(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && l.linkDev != nil && uint64(st.Dev) == *l.linkDev && st.Nlink == 1 && int(st.Uid) == os.Geteuid()
}
