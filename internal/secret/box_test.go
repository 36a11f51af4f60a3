package secret

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// sealer mirrors module.Sealer, which Box must satisfy; it is restated here so this
// package's tests do not depend on the module registry.
type sealer interface {
	Seal(plain []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

var _ sealer = (*Box)(nil)

func testKey(t *testing.T, id string, fill byte) Key {
	t.Helper()
	k, err := NewKey(id, bytes.Repeat([]byte{fill}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpenRoundTrip(t *testing.T) {
	b, err := New(testKey(t, "k1", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, plain := range [][]byte{nil, []byte("x"), []byte("hunter2"), bytes.Repeat([]byte{0xff}, 100_000)} {
		sealed, err := b.Seal(plain)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(sealed, []byte("w1:k1:")) {
			t.Fatalf("sealed value starts %q, want w1:k1:", sealed[:min(len(sealed), 10)])
		}
		if len(plain) > 3 && bytes.Contains(sealed, plain) {
			t.Fatal("sealed value contains the plaintext")
		}
		got, err := b.Open(sealed)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("open gave %d bytes, want %d", len(got), len(plain))
		}
	}
}

func TestSealUsesFreshNonce(t *testing.T) {
	b, _ := New(testKey(t, "k1", 1))
	s1, _ := b.Seal([]byte("same"))
	s2, _ := b.Seal([]byte("same"))
	if bytes.Equal(s1, s2) {
		t.Fatal("sealing the same value twice gave identical output")
	}
}

func TestOpenRefusesTampering(t *testing.T) {
	b, _ := New(testKey(t, "k1", 1), testKey(t, "k2", 2))
	sealed, err := b.Seal([]byte("partner password"))
	if err != nil {
		t.Fatal(err)
	}
	body := sealed[len("w1:k1:"):]
	raw, err := base64.StdEncoding.DecodeString(string(body))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(raw)
		c[i] ^= 0x01
		return append([]byte("w1:k1:"), base64.StdEncoding.EncodeToString(c)...)
	}

	tests := []struct {
		name    string
		sealed  []byte
		wantErr error
	}{
		{"flipped nonce bit", flip(0), ErrCorrupt},
		{"flipped ciphertext bit", flip(13), ErrCorrupt},
		{"flipped tag bit", flip(len(raw) - 1), ErrCorrupt},
		{"truncated", sealed[:len(sealed)-8], ErrCorrupt},
		{"relabelled to another known key", append([]byte("w1:k2:"), body...), ErrCorrupt},
		{"unknown key id", append([]byte("w1:gone:"), body...), ErrUnknownKey},
		{"other version", append([]byte("w2:k1:"), body...), ErrCorrupt},
		{"no prefix", body, ErrCorrupt},
		{"bad base64", []byte("w1:k1:%%%%"), ErrCorrupt},
		{"empty", nil, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.Open(tt.sealed)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Open error = %v, want %v", err, tt.wantErr)
			}
			if got != nil {
				t.Fatal("Open returned plaintext along with an error")
			}
		})
	}
}

func TestOpenUnknownKeyNamesID(t *testing.T) {
	old, _ := New(testKey(t, "retired-2024", 9))
	sealed, _ := old.Seal([]byte("x"))
	b, _ := New(testKey(t, "k1", 1))
	_, err := b.Open(sealed)
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), `"retired-2024"`) {
		t.Fatalf("error %q should name the key id and wrap ErrUnknownKey", err)
	}
}

func TestRotation(t *testing.T) {
	oldKey, newKey := testKey(t, "old", 1), testKey(t, "new", 2)
	before, _ := New(oldKey)
	sealedOld, _ := before.Seal([]byte("api secret"))

	after, err := New(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if after.CurrentKeyID() != "new" {
		t.Fatalf("current key %q, want new", after.CurrentKeyID())
	}
	if got, err := after.Open(sealedOld); err != nil || string(got) != "api secret" {
		t.Fatalf("open value sealed under the previous key: %q, %v", got, err)
	}
	sealedNew, _ := after.Seal([]byte("x"))
	if id, _ := SealedKeyID(sealedNew); id != "new" {
		t.Fatalf("new values are sealed under %q, want new", id)
	}

	rekeyed, err := after.Rekey(sealedOld)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := SealedKeyID(rekeyed); id != "new" {
		t.Fatalf("rekeyed value is under %q, want new", id)
	}
	// Once every value is rekeyed the old key can go.
	onlyNew, _ := New(newKey)
	if got, err := onlyNew.Open(rekeyed); err != nil || string(got) != "api secret" {
		t.Fatalf("open rekeyed value without the old key: %q, %v", got, err)
	}
	if _, err := onlyNew.Open(sealedOld); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("old value without the old key: %v, want ErrUnknownKey", err)
	}
}

func TestNewRefusesBadKeys(t *testing.T) {
	k := testKey(t, "k1", 1)
	tests := []struct {
		name string
		keys []Key
	}{
		{"no keys", nil},
		{"duplicate id", []Key{k, k}},
		{"empty id", []Key{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.keys...); err == nil {
				t.Fatal("New accepted bad keys")
			}
		})
	}
	if _, err := NewKey("has:colon", make([]byte, KeySize)); err == nil {
		t.Fatal("NewKey accepted an id with a colon")
	}
	if _, err := NewKey("short", make([]byte, 16)); err == nil {
		t.Fatal("NewKey accepted 16 bytes of material")
	}
}

func TestKeyNeverPrintsMaterial(t *testing.T) {
	k := testKey(t, "k1", 0x41) // 'A' bytes
	material := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x41}, KeySize))
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("key", "key", k)
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%+v", k), fmt.Sprintf("%#v", k), logged.String()} {
		if strings.Contains(s, material) || strings.Contains(s, "AAAA") || strings.Contains(s, "65 65") {
			t.Fatalf("key material printed: %s", s)
		}
		if !strings.Contains(s, "k1") {
			t.Fatalf("key id missing from %q", s)
		}
	}
}

func BenchmarkSeal1KiB(b *testing.B) {
	k, _ := GenerateKey()
	box, _ := New(k)
	plain := make([]byte, 1024)
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		if _, err := box.Seal(plain); err != nil {
			b.Fatal(err)
		}
	}
}
