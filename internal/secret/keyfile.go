package secret

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"wharf/internal/durable"
)

// A key file holds one key per line, "<key-id>:<base64 of 32 bytes>". The first key is
// the current one; later lines are previous keys still accepted for opening. Blank lines
// and lines starting with '#' are ignored, so an operator can note when a key was retired.

// Load reads a key file. A file readable by group or others is accepted with a warning,
// because refusing it would stop a gateway over a fixable permission.
func Load(path string, logger *slog.Logger) (*Box, error) {
	if logger == nil {
		logger = slog.Default()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key file %s: %w", path, err)
	}
	defer clear(data)
	keys, err := parseKeyFile(path, data)
	if err != nil {
		return nil, err
	}
	durable.WarnIfExposed(path, "secrets key", logger)
	b, err := New(keys...)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return b, nil
}

// ReadKeys reads the keys of a key file, current first, for a tool that rewrites it.
func ReadKeys(path string) ([]Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key file %s: %w", path, err)
	}
	defer clear(data)
	return parseKeyFile(path, data)
}

// LoadOrCreate reads the key file at path or, when there is none, generates a key and
// writes a new file (mode 0600) before returning. created reports the latter. A new file
// is linked into place only if nothing is there yet, so two processes starting at once
// never overwrite each other's key.
func LoadOrCreate(path string, logger *slog.Logger) (b *Box, created bool, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	b, err = Load(path, logger)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return b, false, err
	}
	k, err := GenerateKey()
	if err != nil {
		return nil, false, fmt.Errorf("create key file %s: %w", path, err)
	}
	content := keyFileContent(k)
	defer clear(content)
	won, err := durable.CreateKeyFile(path, content, "key")
	if err != nil {
		return nil, false, err
	}
	if !won {
		b, err := Load(path, logger)
		return b, false, err
	}
	logger.Warn("generated a new secrets key file; back it up separately from the database, sealed secrets cannot be opened without it",
		"path", path, "key_id", k.ID)
	b, err = New(k)
	if err != nil {
		return nil, false, fmt.Errorf("key file %s: %w", path, err)
	}
	return b, true, nil
}

// WriteKeyFile replaces the key file at path with keys, current first, atomically and
// durably (mode 0600). Rotation prepends a GenerateKey result to the keys in use.
func WriteKeyFile(path string, keys ...Key) error {
	if len(keys) == 0 {
		return fmt.Errorf("write key file %s: no key given", path)
	}
	if _, err := New(keys...); err != nil {
		return fmt.Errorf("write key file %s: %w", path, err)
	}
	content := keyFileContent(keys...)
	defer clear(content)
	if _, err := durable.WriteSecretFile(path, content, true); err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	return nil
}

// keyFileContent is the file's text: one line a key, current first.
func keyFileContent(keys ...Key) []byte {
	var sb strings.Builder
	for _, k := range keys {
		sb.WriteString(k.line())
		sb.WriteByte('\n')
	}
	return []byte(sb.String())
}

// parseKeyFile reads the lines of a key file. Errors name the file and the line number
// but never quote the line: it may hold key material.
func parseKeyFile(path string, data []byte) ([]Key, error) {
	var keys []Key
	seen := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, enc, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("key file %s line %d: want <key-id>:<base64 key>", path, n)
		}
		if err := checkKeyID(id); err != nil {
			return nil, fmt.Errorf("key file %s line %d: key id must be 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'", path, n)
		}
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("key file %s line %d: key id %q already used on line %d", path, n, id, prev)
		}
		material, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, fmt.Errorf("key file %s line %d: key %s is not valid base64", path, n, id)
		}
		k, err := NewKey(id, material)
		clear(material)
		if err != nil {
			return nil, fmt.Errorf("key file %s line %d: %w", path, n, err)
		}
		seen[id] = n
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("key file %s holds no key", path)
	}
	return keys, nil
}
