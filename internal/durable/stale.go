package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// RemoveStale deletes the regular files in dir that match one of the patterns
// (filepath.Match) and were last written before cutoff: temporary files a process that
// ended mid-write left behind. Every file that fails to go is named in the joined error.
func RemoveStale(dir string, patterns []string, cutoff time.Time) error {
	var errs []error
	for _, pattern := range patterns {
		names, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return err
		}
		for _, name := range names {
			info, err := os.Lstat(name)
			if err != nil || !info.Mode().IsRegular() || !info.ModTime().Before(cutoff) {
				continue
			}
			if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
