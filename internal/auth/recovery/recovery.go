// Package recovery issues the one-time recovery codes that stand in for a
// TOTP code when the authenticator is lost.
package recovery

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// Count is how many codes a user gets at a time.
const Count = 10

// alphabet is Crockford's base32 in lower case: no i, l, o or u, so no two
// symbols look alike; Match reads i and l as 1 and o as 0.
const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// codeLen symbols of 5 bits each make 50 random bits per code.
const codeLen = 10

// Generate returns Count fresh codes formatted xxxxx-xxxxx to show the user
// once, and their hashes, index for index, to store.
//
// The hash is plain SHA-256 rather than a slow password hash because each
// code is 50 bits drawn at random: there is no dictionary to try, and
// searching 2^50 values per code costs an attacker who stole the hashes days
// of GPU time, while the code only replaces the second factor and is useless
// without the password, which is protected by argon2id. A slow hash would
// instead make every sign-in with a code pay for Count hash computations.
func Generate() (plain, hashed []string, err error) {
	seen := make(map[string]bool, Count)
	for len(plain) < Count {
		var b [codeLen]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, nil, fmt.Errorf("recovery: read random: %w", err)
		}
		code := make([]byte, codeLen)
		for i, v := range b {
			code[i] = alphabet[v&31] // 256 is a multiple of 32, so no bias
		}
		s := string(code)
		if seen[s] {
			continue
		}
		seen[s] = true
		plain = append(plain, s[:5]+"-"+s[5:])
		hashed = append(hashed, hash(s))
	}
	return plain, hashed, nil
}

// Match reports which of hashed, if any, code belongs to. Case, spaces and
// dashes do not matter, and look-alikes are read as Crockford does. Every
// entry is compared in constant time, and entries the caller has blanked
// ("") never match. The codes are one-time only through the caller: it must
// remove or blank hashed[index] in the same transaction that accepts the
// sign-in, so a second use finds nothing.
func Match(code string, hashed []string) (index int, ok bool) {
	norm, valid := normalize(code)
	if !valid {
		return -1, false
	}
	got := []byte(hash(norm))
	index = -1
	for i, h := range hashed {
		if len(h) == len(got) && subtle.ConstantTimeCompare([]byte(h), got) == 1 && index < 0 {
			index = i
		}
	}
	return index, index >= 0
}

func hash(normalized string) string {
	sum := sha256.Sum256([]byte("wharf recovery code\x00" + normalized))
	return hex.EncodeToString(sum[:])
}

func normalize(code string) (string, bool) {
	var b strings.Builder
	for _, r := range strings.ToLower(code) {
		switch {
		case r == ' ' || r == '-' || r == '\t':
			continue
		case r == 'i' || r == 'l':
			r = '1'
		case r == 'o':
			r = '0'
		}
		if r > 0x7f || strings.IndexByte(alphabet, byte(r)) < 0 {
			return "", false
		}
		b.WriteRune(r)
	}
	if b.Len() != codeLen {
		return "", false
	}
	return b.String(), true
}
