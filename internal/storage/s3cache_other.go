//go:build !unix

package storage

import "os"

// lockDir cannot lock here, so the cache stays off.
func lockDir(string) *os.File { return nil }

func removeUnlockedCaches(string) {}
