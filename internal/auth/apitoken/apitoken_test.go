package apitoken

import (
	"context"
	"errors"
	"strings"
	"testing"

	"wharf/internal/persistence"
)

type fakeStore struct{ names, hashes []string }

func (f *fakeStore) CreateScopedAPIToken(_ context.Context, name, hash string, target persistence.InstanceName) (persistence.APIToken, error) {
	for _, n := range f.names {
		if n == name {
			return persistence.APIToken{}, persistence.ErrConflict
		}
	}
	f.names, f.hashes = append(f.names, name), append(f.hashes, hash)
	return persistence.APIToken{Name: name, Hash: hash, Target: target}, nil
}

func TestCreate(t *testing.T) {
	st := &fakeStore{}
	rec, token, err := Create(context.Background(), st, "erp-export", "")
	if err != nil {
		t.Fatal(err)
	}
	if scoped, _, err := Create(context.Background(), st, "erp-done", "erp_poster"); err != nil || scoped.Target != "erp_poster" {
		t.Errorf("scoped token = %+v, %v", scoped, err)
	}
	if !strings.HasPrefix(token, Prefix) || len(token) != len(Prefix)+43 {
		t.Errorf("token %q: want %s and 43 base64url characters", token, Prefix)
	}
	if rec.Hash != Hash(token) || st.hashes[0] == token || strings.Contains(st.hashes[0], token) {
		t.Error("the store got something other than the token's hash")
	}
	_, other, _ := Create(context.Background(), st, "second", "")
	if other == token {
		t.Error("two tokens are equal")
	}
	if _, _, err := Create(context.Background(), st, "erp-export", ""); !errors.Is(err, persistence.ErrConflict) {
		t.Errorf("taken name: %v, want ErrConflict", err)
	}
}

func TestCheckName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"ci", true}, {"erp_export-2", true}, {"", false}, {"Upper", false}, {"with space", false},
		{strings.Repeat("a", 64), true}, {strings.Repeat("a", 65), false},
	} {
		err := CheckName(tt.name)
		var fe *persistence.FieldError
		if (err == nil) != tt.ok || (err != nil && (!errors.As(err, &fe) || fe.Field != "name")) {
			t.Errorf("CheckName(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
	if _, _, err := Create(context.Background(), &fakeStore{}, "Bad Name", ""); err == nil {
		t.Error("Create took an invalid name")
	}
}
