package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

func TestIdentityProviders(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := audit.WithActor(context.Background(), "user:alice")
		before := len(auditEvents(t, s))
		p := persistence.IdentityProvider{Name: "corp", IssuerURL: "https://id.example.com", ClientID: "wharf",
			SealedSecret: []byte("sealed-canary"), Scopes: "profile email", Enabled: true}
		got := must1[persistence.IdentityProvider](t)(s.CreateIdentityProvider(ctx, p))
		if got.DisplayName != "corp" || string(got.SealedSecret) != "sealed-canary" || !got.Enabled {
			t.Errorf("created %+v", got)
		}
		dup := p
		dup.Name = "other"
		if _, err := s.CreateIdentityProvider(ctx, dup); !errors.Is(err, persistence.ErrConflict) {
			t.Errorf("same issuer twice: %v, want ErrConflict", err)
		}
		got.ClientID, got.SealedSecret = "wharf-2", []byte("sealed-canary-2")
		got = must1[persistence.IdentityProvider](t)(s.UpdateIdentityProvider(ctx, got))
		list := must1[[]persistence.IdentityProvider](t)(s.ListIdentityProviders(ctx))
		if len(list) != 1 || list[0].ClientID != "wharf-2" {
			t.Errorf("list = %+v", list)
		}
		must(t, s.DeleteIdentityProvider(ctx, "corp"))
		if _, err := s.GetIdentityProvider(ctx, "corp"); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("get deleted: %v", err)
		}
		if err := s.DeleteIdentityProvider(ctx, "corp"); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("delete twice: %v", err)
		}

		events := auditEvents(t, s)[before:]
		want := []struct{ action, changes string }{
			{"create", `{"path":"client_secret","secret":true}`},
			{"update", `[{"path":"client_id","old":"wharf","new":"wharf-2"},{"path":"client_secret","secret":true}]`},
			{"delete", `{"path":"issuer_url","old":"https://id.example.com"}`},
		}
		if len(events) != len(want) {
			t.Fatalf("%d events, want %d: %+v", len(events), len(want), events)
		}
		for i, w := range want {
			e := events[i]
			c := changesOf(e)
			if e.Action != w.action || e.Kind != "identity_provider" || e.RecordID != "corp" || e.Actor != "user:alice" ||
				!strings.Contains(c, w.changes) {
				t.Errorf("event %d = %s %s %s by %s %s, want %s containing %s", i, e.Action, e.Kind, e.RecordID, e.Actor, c, w.action, w.changes)
			}
			if strings.Contains(c, "canary") {
				t.Errorf("event %d holds the secret: %s", i, c)
			}
		}
	})
}

func TestUserByOIDC(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		u := must1[persistence.User](t)(s.CreateUser(ctx, persistence.User{Name: "sso.bob", Role: persistence.RoleOperator,
			OIDCIssuer: "https://id.example.com", OIDCSubject: "1234"}))
		got := must1[persistence.User](t)(s.GetUserByOIDC(ctx, "https://id.example.com", "1234"))
		if got.ID != u.ID || !got.CanSignIn(got.CreatedAt) {
			t.Errorf("found %+v, want user %d able to sign in", got, u.ID)
		}
		for _, q := range [][2]string{{"https://id.example.com", "12345"}, {"https://other.example.com", "1234"}} {
			if _, err := s.GetUserByOIDC(ctx, q[0], q[1]); !errors.Is(err, persistence.ErrNotFound) {
				t.Errorf("GetUserByOIDC(%q, %q) = %v, want ErrNotFound", q[0], q[1], err)
			}
		}
		if _, err := s.CreateUser(ctx, persistence.User{Name: "sso.bob2", Role: persistence.RoleOperator,
			OIDCIssuer: "https://id.example.com", OIDCSubject: "1234"}); !errors.Is(err, persistence.ErrConflict) {
			t.Errorf("second user of one identity: %v, want ErrConflict", err)
		}
	})
}
