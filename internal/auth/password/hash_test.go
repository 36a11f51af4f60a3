package password

import (
	"errors"
	"strings"
	"testing"
)

// cheap keeps tests fast; the format and checks are the same as in production.
var cheap = Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

func TestHashVerifyRoundTrip(t *testing.T) {
	encoded, err := cheap.Hash("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(encoded, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("unexpected encoding %q", encoded)
	}
	tests := []struct {
		name string
		pw   string
		want bool
	}{
		{"right password", "correct horse battery staple", true},
		{"wrong password", "correct horse battery stapler", false},
		{"empty password", "", false},
		{"case differs", "Correct horse battery staple", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, rehash, err := cheap.Verify(tt.pw, encoded)
			if err != nil || ok != tt.want || rehash {
				t.Fatalf("Verify = %v, %v, %v; want %v, false, nil", ok, rehash, err, tt.want)
			}
		})
	}
}

func TestHashSaltsDiffer(t *testing.T) {
	a, _ := cheap.Hash("same password here")
	b, _ := cheap.Hash("same password here")
	if a == b {
		t.Fatal("two hashes of one password are equal; salt is not random")
	}
}

func TestNeedsRehash(t *testing.T) {
	encoded, err := cheap.Hash("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		params Params
		want   bool
	}{
		{"same params", cheap, false},
		{"more memory", Params{Memory: 128, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}, true},
		{"more time", Params{Memory: 64, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}, true},
		{"more threads", Params{Memory: 64, Time: 1, Threads: 2, SaltLen: 16, KeyLen: 32}, true},
		{"longer key", Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 64}, true},
		{"defaults", DefaultParams, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, rehash, err := tt.params.Verify("correct horse battery staple", encoded)
			if err != nil || !ok || rehash != tt.want {
				t.Fatalf("Verify = %v, %v, %v; want true, %v, nil", ok, rehash, err, tt.want)
			}
		})
	}
	// A wrong password never asks for a rehash.
	if ok, rehash, _ := DefaultParams.Verify("wrong", encoded); ok || rehash {
		t.Fatalf("wrong password: ok=%v rehash=%v", ok, rehash)
	}
}

func TestVerifyMalformed(t *testing.T) {
	good, err := cheap.Hash("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, "$")
	join := func(p ...string) string { return strings.Join(p, "$") }
	tests := []struct {
		name    string
		encoded string
	}{
		{"empty", ""},
		{"bcrypt", "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"},
		{"argon2i", join("", "argon2i", parts[2], parts[3], parts[4], parts[5])},
		{"old version", join("", "argon2id", "v=16", parts[3], parts[4], parts[5])},
		{"missing field", join("", "argon2id", parts[2], parts[3], parts[4])},
		{"extra field", good + "$x"},
		{"params reordered", join("", "argon2id", parts[2], "t=1,m=64,p=1", parts[4], parts[5])},
		{"params not numbers", join("", "argon2id", parts[2], "m=x,t=1,p=1", parts[4], parts[5])},
		{"zero time", join("", "argon2id", parts[2], "m=64,t=0,p=1", parts[4], parts[5])},
		{"zero threads", join("", "argon2id", parts[2], "m=64,t=1,p=0", parts[4], parts[5])},
		{"threads overflow", join("", "argon2id", parts[2], "m=64,t=1,p=300", parts[4], parts[5])},
		{"huge memory", join("", "argon2id", parts[2], "m=4294967295,t=1,p=1", parts[4], parts[5])},
		{"huge time", join("", "argon2id", parts[2], "m=64,t=1000000,p=1", parts[4], parts[5])},
		{"bad salt base64", join("", "argon2id", parts[2], parts[3], "!!!!", parts[5])},
		{"short salt", join("", "argon2id", parts[2], parts[3], "AAAA", parts[5])},
		{"bad hash base64", join("", "argon2id", parts[2], parts[3], parts[4], "***")},
		{"short hash", join("", "argon2id", parts[2], parts[3], parts[4], "AAAA")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, rehash, err := cheap.Verify("correct horse battery staple", tt.encoded)
			if !errors.Is(err, ErrMalformed) || ok || rehash {
				t.Fatalf("Verify = %v, %v, %v; want false, false, ErrMalformed", ok, rehash, err)
			}
		})
	}
}

func TestVerifyTampered(t *testing.T) {
	good, err := cheap.Hash("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, "$")
	flip := func(s string) string {
		b := []byte(s)
		if b[0] == 'A' {
			b[0] = 'B'
		} else {
			b[0] = 'A'
		}
		return string(b)
	}
	tests := []struct {
		name    string
		encoded string
	}{
		{"salt changed", strings.Join([]string{"", parts[1], parts[2], parts[3], flip(parts[4]), parts[5]}, "$")},
		{"hash changed", strings.Join([]string{"", parts[1], parts[2], parts[3], parts[4], flip(parts[5])}, "$")},
		{"time changed", strings.Join([]string{"", parts[1], parts[2], "m=64,t=2,p=1", parts[4], parts[5]}, "$")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, _, err := cheap.Verify("correct horse battery staple", tt.encoded)
			if err != nil || ok {
				t.Fatalf("Verify = %v, %v; want false, nil", ok, err)
			}
		})
	}
}

func TestHashRefusesBadParams(t *testing.T) {
	for _, p := range []Params{
		{},
		{Memory: 64, Time: 0, Threads: 1, SaltLen: 16, KeyLen: 32},
		{Memory: 64, Time: 1, Threads: 1, SaltLen: 4, KeyLen: 32},
		{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 8},
	} {
		if _, err := p.Hash("x"); err == nil {
			t.Errorf("Hash with %+v succeeded", p)
		}
	}
}

func TestDefaultParamsValid(t *testing.T) {
	if err := DefaultParams.validate(); err != nil {
		t.Fatal(err)
	}
}
