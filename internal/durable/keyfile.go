package durable

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
)

// A key file holds a random key as one line of standard base64, so an operator can move
// it between machines as text.

// LoadOrCreateKeyFile reads the key file at path, which must hold size bytes, or, when
// there is none, generates a key and writes a new file (mode 0600, its directory
// created); created reports the latter. A new file is linked into place only if nothing
// is there yet, so two processes starting at once agree on one key. what names the key
// in errors and warnings ("session key"); they name the file, never its content.
func LoadOrCreateKeyFile(path string, size int, what string, logger *slog.Logger) (key []byte, created bool, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	key, err = loadKeyFile(path, size, what, logger)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	key = make([]byte, size)
	rand.Read(key) // never fails; crypto/rand aborts the program instead
	content := []byte(base64.StdEncoding.EncodeToString(key) + "\n")
	defer clear(content)
	won, err := CreateKeyFile(path, content, what)
	if err != nil {
		return nil, false, err
	}
	if !won {
		key, err = loadKeyFile(path, size, what, logger)
		return key, false, err
	}
	return key, true, nil
}

// CreateKeyFile writes content as a new key file at path (mode 0600, its directory
// created) unless one is there already; won reports whether this call's file is the one
// in place. what names the key in errors ("session key").
func CreateKeyFile(path string, content []byte, what string) (won bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("create %s file %s: %w", what, path, err)
	}
	won, err = WriteSecretFile(path, content, false)
	if err != nil {
		return false, fmt.Errorf("%s file: %w", what, err)
	}
	return won, nil
}

// LoadKeyFile reads a key file that must exist.
func LoadKeyFile(path string, size int, what string, logger *slog.Logger) ([]byte, error) {
	if logger == nil {
		logger = slog.Default()
	}
	return loadKeyFile(path, size, what, logger)
}

func loadKeyFile(path string, size int, what string, logger *slog.Logger) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s file %s: %w", what, path, err)
	}
	defer clear(data)
	key, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(data)))
	if err != nil {
		return nil, fmt.Errorf("%s file %s: not one line of base64", what, path)
	}
	if len(key) != size {
		clear(key)
		return nil, fmt.Errorf("%s file %s: the key is %d bytes, want %d", what, path, len(key), size)
	}
	WarnIfExposed(path, what, logger)
	return key, nil
}

// WarnIfExposed warns when the key file at path is open to group or others. It warns
// rather than refuses, because refusing would stop a gateway over a fixable permission.
func WarnIfExposed(path, what string, logger *slog.Logger) {
	if runtime.GOOS == "windows" {
		return // permission bits say nothing about access there
	}
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		logger.Warn(what+" file is readable or writable by group or others; restrict it to its owner (chmod 600)",
			"path", path, "mode", fmt.Sprintf("%04o", perm))
	}
}
