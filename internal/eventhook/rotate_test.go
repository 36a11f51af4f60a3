package eventhook

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/stdwebhook"
)

// A rotation answers the new secret once; until the overlap ends every request carries
// signatures by both secrets, so receivers holding either verify; after it, only the new
// secret signs. A running instance picks the rotation up without a restart.
func TestRotationSignsWithBothSecretsDuringTheOverlap(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		b.reqs = make(chan signed, 10)
		b.subscription("hooks", map[string]any{"events": []string{"*"}})
		_, cfg, err := b.rt.load(ctx, "hooks")
		if err != nil {
			t.Fatal(err)
		}
		oldSecret := cfg.Secret
		newSecret, until, err := b.rt.Rotate(ctx, "hooks")
		if err != nil {
			t.Fatal(err)
		}
		if newSecret == oldSecret || !strings.HasPrefix(newSecret, "whsec_") || until.Sub(b.now()) > RotationOverlap {
			t.Fatalf("Rotate = %q until %s", newSecret, until)
		}
		send := func() signed {
			t.Helper()
			if _, err := b.rt.Test(ctx, "hooks"); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-b.reqs:
				return r
			case <-time.After(20 * time.Second):
				t.Fatal("no request")
			}
			return signed{}
		}
		during := send()
		for _, secret := range []string{oldSecret, newSecret} {
			if err := stdwebhook.Verify(during.header, []string{secret}, during.body, b.now()); err != nil {
				t.Fatalf("during the overlap a receiver's secret does not verify: %v", err)
			}
		}
		var body struct {
			Type string `json:"type"`
			Data struct {
				Instance string `json:"instance"`
			} `json:"data"`
		}
		if err := json.Unmarshal(during.body, &body); err != nil || body.Type != "webhook.test" || body.Data.Instance != "hooks" {
			t.Fatalf("test body = %s (%v)", during.body, err)
		}
		b.advance(RotationOverlap + time.Minute)
		after := send()
		if err := stdwebhook.Verify(after.header, []string{oldSecret}, after.body, b.now()); !errors.Is(err, stdwebhook.ErrNoMatch) {
			t.Fatalf("after the overlap the old secret still verifies: %v", err)
		}
		if err := stdwebhook.Verify(after.header, []string{newSecret}, after.body, b.now()); err != nil {
			t.Fatalf("after the overlap the new secret does not verify: %v", err)
		}
		if _, _, err := b.rt.Rotate(ctx, "nosuch"); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("rotating an unknown subscription: %v", err)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	secret := stdwebhook.NewSecret()
	tests := []struct {
		name   string
		edit   func(c *Config)
		fields []string
	}{
		{"valid", func(*Config) {}, nil},
		{"no secret", func(c *Config) { c.Secret = "" }, []string{"secret"}},
		{"bad secret", func(c *Config) { c.Secret = "whsec_!!" }, []string{"secret"}},
		{"no events", func(c *Config) { c.Events = nil }, []string{"events"}},
		{"unknown event", func(c *Config) { c.Events = append(c.Events, "message.nope") }, []string{"events"}},
		{"bad party", func(c *Config) { c.Party = "ACME Corp" }, []string{"party"}},
		{"disable_after too short", func(c *Config) { c.DisableAfter = 0 }, []string{"disable_after"}},
		{"no url", func(c *Config) { c.URL = "" }, []string{"url"}},
		{"await completion", func(c *Config) { c.AwaitCompletion = 1 }, []string{"await_completion"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConfig()
			c.URL, c.Secret = "https://hooks.example/in", secret
			tc.edit(c)
			err := c.Validate()
			var got []string
			var fe persistence.FieldErrors
			var one *persistence.FieldError
			switch {
			case errors.As(err, &fe):
				for _, f := range fe {
					got = append(got, f.Field)
				}
			case errors.As(err, &one):
				got = []string{one.Field}
			case err != nil:
				t.Fatalf("Validate = %v", err)
			}
			if strings.Join(got, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("fields refused %v, want %v (%v)", got, tc.fields, err)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Fatal("the error repeats the secret")
			}
		})
	}
}
