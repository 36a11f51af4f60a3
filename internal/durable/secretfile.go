package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// WriteSecretFile writes content (key material) to a temporary file beside path with mode
// 0600, syncs it and puts it in place: with replace it replaces any file there, without it
// it links the file into place only if none exists, and won is false when another writer
// got there first. The directory is synced so the name survives a power loss. Errors name
// the path, never the content.
func WriteSecretFile(path string, content []byte, replace bool) (won bool, err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	if replace {
		if err := os.Rename(tmpName, path); err != nil {
			return false, fmt.Errorf("write %s: %w", path, err)
		}
	} else if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		// Some file systems have no hard links; fall back to a rename after checking
		// once more that no file has appeared.
		if _, serr := os.Lstat(path); serr == nil {
			return false, nil
		}
		if err := os.Rename(tmpName, path); err != nil {
			return false, fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := SyncDir(dir); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}
