package records

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"wharf/internal/persistence"
)

func TestParseIssuerURL(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"https://login.example.com", true},
		{"https://login.example.com/realms/corp/", true},
		{"http://127.0.0.1:5556/dex", true},
		{"http://localhost:8080", true},
		{"http://[::1]:8080", true},
		{"http://login.example.com", false},
		{"http://10.0.0.1", false},
		{"ftp://login.example.com", false},
		{"https://user:pw@login.example.com", false},
		{"https://login.example.com/?x=1", false},
		{"https://login.example.com/#f", false},
		{"login.example.com", false},
		{"", false},
	} {
		_, err := ParseIssuerURL(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseIssuerURL(%q) = %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}

func TestParseScopes(t *testing.T) {
	got, err := ParseScopes("  openid profile  email profile groups ")
	if err != nil || got != "profile email groups" {
		t.Errorf("ParseScopes = %q, %v", got, err)
	}
	if _, err := ParseScopes(`a"b`); err == nil {
		t.Error("a quote in a scope is accepted")
	}
}

type providerStore struct {
	m map[string]persistence.IdentityProvider
}

func (s *providerStore) CreateIdentityProvider(_ context.Context, p persistence.IdentityProvider) (persistence.IdentityProvider, error) {
	if _, ok := s.m[p.Name]; ok {
		return p, persistence.ErrConflict
	}
	s.m[p.Name] = p
	return p, nil
}

func (s *providerStore) GetIdentityProvider(_ context.Context, name string) (persistence.IdentityProvider, error) {
	p, ok := s.m[name]
	if !ok {
		return p, fmt.Errorf("provider %s: %w", name, persistence.ErrNotFound)
	}
	return p, nil
}

func (s *providerStore) UpdateIdentityProvider(_ context.Context, p persistence.IdentityProvider) (persistence.IdentityProvider, error) {
	s.m[p.Name] = p
	return p, nil
}

type prefixSealer struct{}

func (prefixSealer) Seal(b []byte) ([]byte, error) { return append([]byte("sealed:"), b...), nil }

func TestSaveIdentityProviderKeepsWriteOnlySecret(t *testing.T) {
	ctx := context.Background()
	st := &providerStore{m: map[string]persistence.IdentityProvider{}}
	secret := "s3cret"
	in := IdentityProviderInput{Name: "corp", IssuerURL: "https://id.example.com", ClientID: "wharf", ClientSecret: &secret}
	p, err := SaveIdentityProvider(ctx, st, prefixSealer{}, "", in)
	if err != nil || string(p.SealedSecret) != "sealed:s3cret" || p.DisplayName != "corp" || !p.Enabled {
		t.Fatalf("create = %+v, %v", p, err)
	}
	off := false
	in.ClientSecret, in.ClientID, in.Enabled = nil, "wharf-2", &off
	if p, err = SaveIdentityProvider(ctx, st, prefixSealer{}, "corp", in); err != nil || string(p.SealedSecret) != "sealed:s3cret" {
		t.Fatalf("update without a secret = %+v, %v; want the stored secret kept", p, err)
	}
	empty := ""
	in.ClientSecret, in.Enabled = &empty, nil
	if p, err = SaveIdentityProvider(ctx, st, prefixSealer{}, "corp", in); err != nil || p.SealedSecret != nil || p.Enabled {
		t.Fatalf("update with an empty secret = %+v, %v; want it removed and the provider still disabled", p, err)
	}
	if _, err := SaveIdentityProvider(ctx, st, prefixSealer{}, "nope", IdentityProviderInput{IssuerURL: "https://x.example.com", ClientID: "x"}); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("update of a missing provider: %v", err)
	}
	bad := IdentityProviderInput{Name: "Bad Name", IssuerURL: "http://id.example.com", ClientID: ""}
	_, err = SaveIdentityProvider(ctx, st, prefixSealer{}, "", bad)
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *persistence.FieldError
		if errors.As(e, &fe) {
			fields = append(fields, fe.Field)
		}
	}
	if fmt.Sprint(fields) != "[name issuer_url client_id]" {
		t.Errorf("refused fields = %v, want name, issuer_url and client_id", fields)
	}
}

// TestSaveIdentityProviderBindsSecretToIssuer changes a provider's issuer: without the
// client secret it is refused and nothing changes; with the secret entered again, or
// cleared, it is accepted.
func TestSaveIdentityProviderBindsSecretToIssuer(t *testing.T) {
	ctx := context.Background()
	secret, fresh, empty := "s3cret", "n3w", ""
	for _, tt := range []struct {
		name    string
		issuer  string
		secret  *string
		refused bool
		sealed  string
	}{
		{"same issuer", "https://id.example.com/realms/corp", nil, false, "sealed:s3cret"},
		{"other host", "https://evil.example.com/realms/corp", nil, true, ""},
		{"other path on the same host", "https://id.example.com/realms/evil", nil, true, ""},
		{"other host, secret entered again", "https://evil.example.com/realms/corp", &fresh, false, "sealed:n3w"},
		{"other host, secret cleared", "https://evil.example.com/realms/corp", &empty, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &providerStore{m: map[string]persistence.IdentityProvider{}}
			in := IdentityProviderInput{Name: "corp", IssuerURL: "https://id.example.com/realms/corp", ClientID: "wharf", ClientSecret: &secret}
			before, err := SaveIdentityProvider(ctx, st, prefixSealer{}, "", in)
			if err != nil {
				t.Fatal(err)
			}
			in.IssuerURL, in.ClientSecret = tt.issuer, tt.secret
			p, err := SaveIdentityProvider(ctx, st, prefixSealer{}, "corp", in)
			if tt.refused {
				var fe *persistence.FieldError
				if !errors.As(err, &fe) || fe.Field != "client_secret" {
					t.Fatalf("save = %v; want a field error on client_secret", err)
				}
				if got := st.m["corp"]; got.IssuerURL != before.IssuerURL || string(got.SealedSecret) != "sealed:s3cret" {
					t.Errorf("a refused save changed the provider: %+v", got)
				}
				return
			}
			if err != nil || p.IssuerURL != tt.issuer || string(p.SealedSecret) != tt.sealed {
				t.Fatalf("save = %+v, %v; want issuer %s and secret %q", p, err, tt.issuer, tt.sealed)
			}
		})
	}
}
