// Package secret seals secret values at rest (private keys, partner passwords, webhook URLs
// and headers, OIDC client secrets, TOTP secrets) with AES-256-GCM under a master key that
// lives outside the database.
//
// A Box holds one or more keys, each with an id. The first key is the current one: Seal
// always uses it. The others are previous keys, kept so values sealed before a rotation
// still open; Rekey moves a value to the current key.
//
// A sealed value is text and describes itself:
//
//	w1:<key-id>:<base64 of nonce ‖ ciphertext ‖ tag>
//
// "w1" is the format version. The whole prefix "w1:<key-id>:" is authenticated as
// additional data, so a value cannot be relabelled to another key or version. Errors name
// key ids and files, never key material or plaintext.
package secret

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
)

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

const formatV1 = "w1"

var (
	// ErrUnknownKey means a sealed value names a key id the box does not hold: the key
	// file is not the one the value was sealed under, or a previous key was dropped too
	// early.
	ErrUnknownKey = errors.New("unknown key id")
	// ErrCorrupt means a sealed value is not in a known format or fails authentication
	// (it was altered, truncated, or sealed under a different key with the same id).
	ErrCorrupt = errors.New("sealed value is corrupt or was tampered with")
)

// keyIDRE admits ids that are safe in the sealed format (no ':') and in a key file line.
var keyIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Key is one master key with its id. Its material is unexported and its String, GoString
// and LogValue redact it, so printing or logging a Key never shows the secret.
type Key struct {
	ID       string
	material [KeySize]byte
}

// NewKey makes a key from its id and 32 bytes of material.
func NewKey(id string, material []byte) (Key, error) {
	if err := checkKeyID(id); err != nil {
		return Key{}, err
	}
	if len(material) != KeySize {
		return Key{}, fmt.Errorf("key %s: material is %d bytes, want %d", id, len(material), KeySize)
	}
	k := Key{ID: id}
	copy(k.material[:], material)
	return k, nil
}

// GenerateKey makes a new random key. Its id starts with the creation date so an operator
// rotating keys can tell old from new at a glance.
func GenerateKey() (Key, error) {
	var suffix [4]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return Key{}, fmt.Errorf("generate key id: %w", err)
	}
	k := Key{ID: time.Now().UTC().Format("20060102") + "-" + hex.EncodeToString(suffix[:])}
	if _, err := rand.Read(k.material[:]); err != nil {
		return Key{}, fmt.Errorf("generate key material: %w", err)
	}
	return k, nil
}

func (k Key) String() string       { return "secret.Key{ID: " + k.ID + ", material: redacted}" }
func (k Key) GoString() string     { return k.String() }
func (k Key) LogValue() slog.Value { return slog.GroupValue(slog.String("id", k.ID)) }
func (k Key) line() string         { return k.ID + ":" + base64.StdEncoding.EncodeToString(k.material[:]) }

func checkKeyID(id string) error {
	if !keyIDRE.MatchString(id) {
		return fmt.Errorf("invalid key id %q: use 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'", id)
	}
	return nil
}

// Box seals and opens values. It is safe for concurrent use.
type Box struct {
	current string
	ids     []string // in key file order, current first
	aeads   map[string]cipher.AEAD
}

// New makes a box from keys; the first is the current key. Ids must be unique.
func New(keys ...Key) (*Box, error) {
	if len(keys) == 0 {
		return nil, errors.New("new secret box: no key given")
	}
	b := &Box{current: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for _, k := range keys {
		if err := checkKeyID(k.ID); err != nil {
			return nil, fmt.Errorf("new secret box: %w", err)
		}
		if _, dup := b.aeads[k.ID]; dup {
			return nil, fmt.Errorf("new secret box: key id %q appears twice", k.ID)
		}
		block, err := aes.NewCipher(k.material[:])
		if err != nil {
			return nil, fmt.Errorf("new secret box: key %s: %w", k.ID, err)
		}
		// The random-nonce mode draws a fresh 96-bit nonce per seal and prepends it, so
		// no caller can ever reuse a nonce.
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("new secret box: key %s: %w", k.ID, err)
		}
		b.aeads[k.ID] = aead
		b.ids = append(b.ids, k.ID)
	}
	return b, nil
}

// CurrentKeyID is the id of the key Seal uses.
func (b *Box) CurrentKeyID() string { return b.current }

// KeyIDs lists the ids the box holds, current first.
func (b *Box) KeyIDs() []string { return append([]string(nil), b.ids...) }

// Seal encrypts plain under the current key.
func (b *Box) Seal(plain []byte) ([]byte, error) {
	prefix := sealedPrefix(b.current)
	ct := b.aeads[b.current].Seal(nil, nil, plain, prefix)
	out := make([]byte, len(prefix)+base64.StdEncoding.EncodedLen(len(ct)))
	copy(out, prefix)
	base64.StdEncoding.Encode(out[len(prefix):], ct)
	return out, nil
}

// Open decrypts a value sealed under any key the box holds.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	id, body, err := split(sealed)
	if err != nil {
		return nil, fmt.Errorf("open sealed value: %w", err)
	}
	aead, ok := b.aeads[id]
	if !ok {
		return nil, fmt.Errorf("open sealed value: key %q is not in the key file: %w", id, ErrUnknownKey)
	}
	ct := make([]byte, base64.StdEncoding.DecodedLen(len(body)))
	n, err := base64.StdEncoding.Decode(ct, body)
	if err != nil {
		return nil, fmt.Errorf("open sealed value (key %s): %w", id, ErrCorrupt)
	}
	plain, err := aead.Open(nil, nil, ct[:n], sealedPrefix(id))
	if err != nil {
		return nil, fmt.Errorf("open sealed value (key %s): %w", id, ErrCorrupt)
	}
	return plain, nil
}

// Rekey opens a value with whichever key sealed it and seals it again under the current
// key. A value already under the current key gets a fresh nonce and stays valid.
func (b *Box) Rekey(sealed []byte) ([]byte, error) {
	plain, err := b.Open(sealed)
	if err != nil {
		return nil, fmt.Errorf("rekey: %w", err)
	}
	defer clear(plain)
	return b.Seal(plain)
}

// SealedKeyID tells which key id a sealed value names, without opening it, so a rekey run
// can skip values that are already current.
func SealedKeyID(sealed []byte) (string, error) {
	id, _, err := split(sealed)
	if err != nil {
		return "", fmt.Errorf("read sealed value: %w", err)
	}
	return id, nil
}

func sealedPrefix(id string) []byte {
	return []byte(formatV1 + ":" + id + ":")
}

// split takes "w1:<id>:<body>" apart. It never quotes the input back: a damaged value may
// still hold secret bytes.
func split(sealed []byte) (id string, body []byte, err error) {
	rest, ok := bytes.CutPrefix(sealed, []byte(formatV1+":"))
	if !ok {
		return "", nil, fmt.Errorf("not in sealed format %s: %w", formatV1, ErrCorrupt)
	}
	rawID, body, ok := bytes.Cut(rest, []byte(":"))
	if !ok || !keyIDRE.Match(rawID) {
		return "", nil, fmt.Errorf("no valid key id: %w", ErrCorrupt)
	}
	return string(rawID), body, nil
}
