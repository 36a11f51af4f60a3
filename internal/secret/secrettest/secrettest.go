// Package secrettest gives tests secrets key files.
package secrettest

import (
	"testing"

	"wharf/internal/secret"
)

// WriteNewKey writes a key file at path holding one new key, and returns the key.
func WriteNewKey(tb testing.TB, path string) secret.Key {
	tb.Helper()
	k, err := secret.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	if err := secret.WriteKeyFile(path, k); err != nil {
		tb.Fatal(err)
	}
	return k
}
