package session

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

	"wharf/internal/durable"
)

// KeySize is the length of a session key: an AES-256 key.
const KeySize = 32

// Key seals session cookies. It prints redacted so a logged value never shows it.
type Key struct {
	b [KeySize]byte
}

// String keeps the key out of logs and error messages.
func (Key) String() string { return "session.Key(redacted)" }

// GoString keeps the key out of %#v output as well.
func (k Key) GoString() string { return k.String() }

// NewKey returns a key holding material, which must be KeySize bytes.
func NewKey(material []byte) (Key, error) {
	var k Key
	if len(material) != KeySize {
		return k, fmt.Errorf("session key is %d bytes, want %d", len(material), KeySize)
	}
	copy(k.b[:], material)
	return k, nil
}

// GenerateKey returns a new random key.
func GenerateKey() Key {
	var k Key
	rand.Read(k.b[:]) // never fails; crypto/rand aborts the program instead
	return k
}

// The key file holds the key as one line of standard base64, so an operator can move it
// between machines as text.

// LoadOrCreateKey reads the session key file at path or, when there is none, generates a
// key and writes a new file (mode 0600, its directory created) before returning; created
// reports the latter. A new file is linked into place only if nothing is there yet, so
// two processes starting at once agree on one key.
func LoadOrCreateKey(path string, logger *slog.Logger) (k Key, created bool, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	k, err = loadKey(path, logger)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, false, err
	}
	k = GenerateKey()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Key{}, false, fmt.Errorf("create session key file %s: %w", path, err)
	}
	won, err := writeKeyFile(path, k)
	if err != nil {
		return Key{}, false, err
	}
	if !won {
		k, err = loadKey(path, logger)
		return k, false, err
	}
	logger.Info("generated a new session key file; deleting or replacing it signs everyone out",
		"path", path)
	return k, true, nil
}

// loadKey reads a key file. Errors name the file but never quote its content.
func loadKey(path string, logger *slog.Logger) (Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("read session key file %s: %w", path, err)
	}
	defer clear(data)
	material, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(data)))
	if err != nil {
		return Key{}, fmt.Errorf("session key file %s: not one line of base64", path)
	}
	defer clear(material)
	k, err := NewKey(material)
	if err != nil {
		return Key{}, fmt.Errorf("session key file %s: %w", path, err)
	}
	warnIfExposed(path, logger)
	return k, nil
}

// writeKeyFile writes k to a temporary file beside path, syncs it and links it into
// place; won is false when another writer got there first. The directory is synced so
// the name survives a power loss.
func writeKeyFile(path string, k Key) (won bool, err error) {
	content := []byte(base64.StdEncoding.EncodeToString(k.b[:]) + "\n")
	defer clear(content)
	won, err = durable.WriteSecretFile(path, content, false)
	if err != nil {
		return false, fmt.Errorf("session key file: %w", err)
	}
	return won, nil
}

// warnIfExposed warns rather than refuses, because refusing would stop a gateway over a
// fixable permission.
func warnIfExposed(path string, logger *slog.Logger) {
	if runtime.GOOS == "windows" {
		return // permission bits say nothing about access there
	}
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		logger.Warn("session key file is readable or writable by group or others; restrict it to its owner (chmod 600)",
			"path", path, "mode", fmt.Sprintf("%04o", perm))
	}
}
