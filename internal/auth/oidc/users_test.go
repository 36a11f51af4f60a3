package oidc_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"wharf/internal/audit"
	"wharf/internal/auth/oidc"
	"wharf/internal/persistence"
)

type userStore struct {
	users  []persistence.User
	actors []string
}

func (s *userStore) GetUserByOIDC(_ context.Context, issuer, subject string) (persistence.User, error) {
	for _, u := range s.users {
		if u.OIDCIssuer == issuer && u.OIDCSubject == subject {
			return u, nil
		}
	}
	return persistence.User{}, persistence.ErrNotFound
}

func (s *userStore) CreateUser(ctx context.Context, u persistence.User) (persistence.User, error) {
	if _, err := persistence.ParseUserName(string(u.Name)); err != nil {
		return u, err
	}
	for _, x := range s.users {
		if x.Name == u.Name {
			return u, persistence.ErrConflict
		}
	}
	u.ID = int64(len(s.users) + 1)
	s.users = append(s.users, u)
	s.actors = append(s.actors, audit.ActorFrom(ctx))
	return u, nil
}

func TestSignInUser(t *testing.T) {
	ctx := context.Background()
	st := &userStore{users: []persistence.User{{ID: 100, Name: "alice"}}}
	id := oidc.Identity{Issuer: "https://id.example.com", Subject: "s1", PreferredUsername: "Alice", Name: "Alice Example"}
	u, err := oidc.SignInUser(ctx, st, "corp", id)
	if err != nil || u.Name != "alice-2" || u.Role != persistence.RoleOperator || u.DisplayName != "Alice Example" {
		t.Fatalf("first sign-in = %+v, %v; want operator alice-2 (alice is taken)", u, err)
	}
	if st.actors[0] != "oidc:corp" {
		t.Errorf("creation audited as %q", st.actors[0])
	}
	// The same identity finds the same user, whatever its name claims now.
	id.PreferredUsername = "mallory"
	if again, err := oidc.SignInUser(ctx, st, "corp", id); err != nil || again.ID != u.ID {
		t.Errorf("second sign-in = %+v, %v; want user %d", again, err, u.ID)
	}
	// A name matching an existing user never links to it: another subject is another user.
	other := oidc.Identity{Issuer: "https://id.example.com", Subject: "s2", PreferredUsername: "alice-2"}
	if o, err := oidc.SignInUser(ctx, st, "corp", other); err != nil || o.ID == u.ID {
		t.Errorf("other subject = %+v, %v", o, err)
	}
	st.users[1].Disabled = true
	if _, err := oidc.SignInUser(ctx, st, "corp", id); !errors.Is(err, oidc.ErrDisabled) {
		t.Errorf("disabled user: %v", err)
	}
}

func TestBaseUserName(t *testing.T) {
	for _, tc := range []struct {
		id   oidc.Identity
		want string
	}{
		{oidc.Identity{PreferredUsername: "Bob.Smith"}, "bob.smith"},
		{oidc.Identity{PreferredUsername: "bob smith@corp"}, "bob-smith-corp"},
		{oidc.Identity{Email: "carol+x@example.com"}, "carol-x"},
		{oidc.Identity{PreferredUsername: "--"}, "sso-user"},
		{oidc.Identity{}, "sso-user"},
		{oidc.Identity{PreferredUsername: strings.Repeat("a", 80)}, strings.Repeat("a", 64)},
	} {
		if got := oidc.BaseUserName(tc.id); got != tc.want {
			t.Errorf("BaseUserName(%+v) = %q, want %q", tc.id, got, tc.want)
		}
		if _, err := persistence.ParseUserName(oidc.BaseUserName(tc.id)); err != nil {
			t.Errorf("BaseUserName(%+v) is not a valid name: %v", tc.id, err)
		}
	}
}
