// Package password hashes passwords with argon2id into PHC strings and checks
// new passwords against length, common-password and context rules.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are the argon2id cost parameters written into every hash.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32 // passes over memory
	Threads uint8  // lanes
	SaltLen uint32 // bytes
	KeyLen  uint32 // bytes
}

// DefaultParams suit the 2-core servers Wharf runs on: 64 MiB is the memory
// RFC 9106 recommends when 2 GiB per hash is out of reach, two lanes keep
// both cores busy, and two passes put a hash at about 140 ms on those
// machines: quick enough for a sign-in, slow enough that an offline guess
// costs real memory and time, while the throttle bounds how many hashes an
// online attacker can make the server compute.
var DefaultParams = Params{Memory: 64 * 1024, Time: 2, Threads: 2, SaltLen: 16, KeyLen: 32}

// Limits on parameters read back from a stored hash, so that a corrupted or
// hostile row cannot make Verify allocate or spin without bound.
const (
	maxMemory  = 1 << 20 // 1 GiB in KiB
	maxTime    = 16
	minSaltLen = 8
	maxSaltLen = 64
	minKeyLen  = 16
	maxKeyLen  = 64
)

// ErrMalformed reports a stored hash that is not an argon2id PHC string this
// package can verify.
var ErrMalformed = errors.New("password: malformed argon2id hash")

var b64 = base64.RawStdEncoding

// Hash hashes pw with DefaultParams.
func Hash(pw string) (string, error) { return DefaultParams.Hash(pw) }

// Verify checks pw against encoded and reports whether encoded was made with
// parameters other than DefaultParams.
func Verify(pw, encoded string) (ok, needsRehash bool, err error) {
	return DefaultParams.Verify(pw, encoded)
}

// Hash hashes pw with a fresh random salt and returns the PHC string
// $argon2id$v=19$m=…,t=…,p=…$salt$hash.
func (p Params) Hash(pw string) (string, error) {
	if err := p.validate(); err != nil {
		return "", err
	}
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password: read salt: %w", err)
	}
	key := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify checks pw against encoded using the parameters stored in encoded and
// compares the keys in constant time. needsRehash is true when the password
// matched but encoded was made with parameters other than p, so the caller
// can store a fresh Hash.
func (p Params) Verify(pw, encoded string) (ok, needsRehash bool, err error) {
	stored, salt, key, err := decode(encoded)
	if err != nil {
		return false, false, err
	}
	got := argon2.IDKey([]byte(pw), salt, stored.Time, stored.Memory, stored.Threads, uint32(len(key)))
	if subtle.ConstantTimeCompare(got, key) != 1 {
		return false, false, nil
	}
	return true, stored != p, nil
}

func (p Params) validate() error {
	switch {
	case p.Memory < 8*uint32(p.Threads) || p.Memory > maxMemory:
		return fmt.Errorf("password: memory %d KiB out of range", p.Memory)
	case p.Time < 1 || p.Time > maxTime:
		return fmt.Errorf("password: time %d out of range", p.Time)
	case p.Threads < 1:
		return errors.New("password: threads must be at least 1")
	case p.SaltLen < minSaltLen || p.SaltLen > maxSaltLen:
		return fmt.Errorf("password: salt length %d out of range", p.SaltLen)
	case p.KeyLen < minKeyLen || p.KeyLen > maxKeyLen:
		return fmt.Errorf("password: key length %d out of range", p.KeyLen)
	}
	return nil
}

// decode parses a PHC string; the Params it returns carry the salt and key
// lengths found in it so that they compare equal to the Params that made it.
func decode(encoded string) (Params, []byte, []byte, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return Params{}, nil, nil, ErrMalformed
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return Params{}, nil, nil, fmt.Errorf("%w: unsupported version %q", ErrMalformed, parts[2])
	}
	var p Params
	fields := strings.Split(parts[3], ",")
	if len(fields) != 3 {
		return Params{}, nil, nil, fmt.Errorf("%w: parameters %q", ErrMalformed, parts[3])
	}
	for i, name := range []string{"m", "t", "p"} {
		value, ok := strings.CutPrefix(fields[i], name+"=")
		if !ok {
			return Params{}, nil, nil, fmt.Errorf("%w: parameters %q", ErrMalformed, parts[3])
		}
		bits := 32
		if name == "p" {
			bits = 8
		}
		n, err := strconv.ParseUint(value, 10, bits)
		if err != nil {
			return Params{}, nil, nil, fmt.Errorf("%w: parameter %s", ErrMalformed, name)
		}
		switch name {
		case "m":
			p.Memory = uint32(n)
		case "t":
			p.Time = uint32(n)
		case "p":
			p.Threads = uint8(n)
		}
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return Params{}, nil, nil, fmt.Errorf("%w: salt", ErrMalformed)
	}
	key, err := b64.DecodeString(parts[5])
	if err != nil {
		return Params{}, nil, nil, fmt.Errorf("%w: hash", ErrMalformed)
	}
	p.SaltLen, p.KeyLen = uint32(len(salt)), uint32(len(key))
	if err := p.validate(); err != nil {
		return Params{}, nil, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return p, salt, key, nil
}
