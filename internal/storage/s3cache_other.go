//go:build !unix

package storage

import "os"

// lockDir cannot lock a directory here (errNoLocks): the cache stays off.
func lockDir(string) (*os.File, error) { return nil, errNoLocks }

func removeUnlockedCaches(string) {}
