package session

import (
	"crypto/rand"
	"fmt"
	"log/slog"

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

// LoadOrCreateKey reads the session key file at path or, when there is none, generates a
// key and writes a new file (mode 0600, its directory created) before returning; created
// reports the latter. See durable.LoadOrCreateKeyFile for the file's form.
func LoadOrCreateKey(path string, logger *slog.Logger) (k Key, created bool, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	material, created, err := durable.LoadOrCreateKeyFile(path, KeySize, "session key", logger)
	if err != nil {
		return Key{}, false, err
	}
	defer clear(material)
	k, err = NewKey(material)
	if err != nil {
		return Key{}, false, err
	}
	if created {
		logger.Info("generated a new session key file; deleting or replacing it signs everyone out",
			"path", path)
	}
	return k, created, nil
}
