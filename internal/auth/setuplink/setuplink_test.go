package setuplink

import (
	"context"
	"testing"
	"time"

	"wharf/internal/persistence"
)

type fakeStore struct {
	created   persistence.User
	tokenHash string
	expires   time.Time
	calls     []string
}

func (f *fakeStore) CreateUser(_ context.Context, u persistence.User) (persistence.User, error) {
	f.created = u
	u.ID = 7
	return u, nil
}

func (f *fakeStore) BumpUserGeneration(context.Context, int64) error {
	f.calls = append(f.calls, "bump")
	return nil
}

func (f *fakeStore) SetUserSetupToken(_ context.Context, _ int64, hash string, expires time.Time) error {
	f.tokenHash, f.expires = hash, expires
	f.calls = append(f.calls, "token")
	return nil
}

func TestCreate(t *testing.T) {
	st := &fakeStore{}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	u, token, err := Create(context.Background(), st, persistence.User{Name: "bob", Role: persistence.RoleOperator}, now)
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != 7 || st.created.SetupTokenHash != Hash(token) || st.created.SetupTokenHash == token ||
		!st.created.SetupExpiresAt.Equal(now.Add(TTL)) || st.created.Role != persistence.RoleOperator {
		t.Errorf("stored user = %+v", st.created)
	}
	if got := URL("https://wharf.example", token); got != "https://wharf.example/ui/setup/"+token {
		t.Errorf("URL = %q", got)
	}
}

// TestReset ends the sessions before the new link exists, so no session outlives a reset.
func TestReset(t *testing.T) {
	st := &fakeStore{}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	token, expires, err := Reset(context.Background(), st, 7, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.calls) != 2 || st.calls[0] != "bump" || st.tokenHash != Hash(token) || !expires.Equal(now.Add(TTL)) || !st.expires.Equal(expires) {
		t.Errorf("reset: calls %v, hash %q, expires %v", st.calls, st.tokenHash, expires)
	}
	other, _, _ := Reset(context.Background(), st, 7, now)
	if other == token {
		t.Error("two links are equal")
	}
}
