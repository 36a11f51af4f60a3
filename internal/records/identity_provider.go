package records

import (
	"context"
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"

	"wharf/internal/persistence"
)

// ProviderStore is what the identity provider rules read and write.
type ProviderStore interface {
	CreateIdentityProvider(ctx context.Context, p persistence.IdentityProvider) (persistence.IdentityProvider, error)
	GetIdentityProvider(ctx context.Context, name string) (persistence.IdentityProvider, error)
	UpdateIdentityProvider(ctx context.Context, p persistence.IdentityProvider) (persistence.IdentityProvider, error)
}

var _ ProviderStore = persistence.Store(nil)

// Sealer seals secrets under the master key.
type Sealer interface {
	Seal(plain []byte) ([]byte, error)
}

// IdentityProviderInput is an OIDC provider as a client writes it. ClientSecret is
// write-only: nil keeps the stored secret, an empty string removes it (a public client).
type IdentityProviderInput struct {
	Name         string
	DisplayName  string
	IssuerURL    string
	ClientID     string
	ClientSecret *string
	Audience     string
	Scopes       string
	// Enabled nil is true for a new provider and the stored value for an update.
	Enabled *bool
}

const (
	maxClientSecret = 1024
	maxOIDCText     = 255
)

// SaveIdentityProvider validates in and stores it: a new provider when name is empty,
// otherwise the stored provider name (whose name cannot change). The client secret is
// sealed with s before it reaches the store.
func SaveIdentityProvider(ctx context.Context, st ProviderStore, s Sealer, name string, in IdentityProviderInput) (persistence.IdentityProvider, error) {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var stored *persistence.IdentityProvider
	if name != "" {
		if in.Name != "" && in.Name != name {
			add(fieldError("name", "cannot be changed"))
		}
		in.Name = name
	} else if _, err := persistence.ParseProviderName(in.Name); err != nil {
		add(fieldError("name", "use 1 to 64 of a-z, 0-9, _ and -"))
	}
	display, err := ParseDisplayName(in.DisplayName)
	add(err)
	issuer, err := ParseIssuerURL(in.IssuerURL)
	add(err)
	clientID := strings.TrimSpace(in.ClientID)
	switch {
	case clientID == "":
		add(fieldError("client_id", "is required"))
	default:
		add(checkToken("client_id", clientID))
	}
	audience := strings.TrimSpace(in.Audience)
	if audience != "" {
		add(checkToken("audience", audience))
	}
	scopes, err := ParseScopes(in.Scopes)
	add(err)
	if in.ClientSecret != nil {
		switch sec := *in.ClientSecret; {
		case len(sec) > maxClientSecret:
			add(fieldError("client_secret", "must be at most 1024 bytes"))
		case strings.ContainsFunc(sec, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			add(fieldError("client_secret", "must not contain control characters"))
		}
	}
	if len(errs) > 0 {
		return persistence.IdentityProvider{}, errors.Join(errs...)
	}
	if name != "" {
		rec, err := st.GetIdentityProvider(ctx, name)
		if err != nil {
			return persistence.IdentityProvider{}, err
		}
		stored = &rec
		// The client secret goes to the token endpoint that the issuer's discovery
		// document names, so it is bound to the issuer as a whole: even a new path can
		// be another tenant of a shared provider. A stored secret never follows a changed
		// issuer; it must be entered again, or cleared.
		if in.ClientSecret == nil && len(rec.SealedSecret) > 0 && issuer != rec.IssuerURL {
			return persistence.IdentityProvider{}, fieldError("client_secret",
				"enter it again, or clear it: the issuer changed, and a stored secret does not follow it to another provider")
		}
	}
	p := persistence.IdentityProvider{Name: in.Name, DisplayName: display, IssuerURL: issuer, ClientID: clientID,
		Audience: audience, Scopes: scopes, Enabled: true}
	switch {
	case in.Enabled != nil:
		p.Enabled = *in.Enabled
	case stored != nil:
		p.Enabled = stored.Enabled
	}
	if p.DisplayName == "" {
		p.DisplayName = p.Name
	}
	switch {
	case in.ClientSecret != nil && *in.ClientSecret != "":
		sealed, err := s.Seal([]byte(*in.ClientSecret))
		if err != nil {
			return persistence.IdentityProvider{}, err
		}
		p.SealedSecret = sealed
	case in.ClientSecret == nil && stored != nil:
		p.SealedSecret = stored.SealedSecret
	}
	if stored == nil {
		return st.CreateIdentityProvider(ctx, p)
	}
	p.CreatedAt = stored.CreatedAt
	return st.UpdateIdentityProvider(ctx, p)
}

// ParseIssuerURL checks an issuer URL: https, or http to a loopback address (a provider on
// the same host, a test); no user, query or fragment. The URL is kept as typed, since the
// provider's discovery document must name exactly it.
func ParseIssuerURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fieldError("issuer_url", "is required")
	}
	if len(s) > 1024 {
		return "", fieldError("issuer_url", "must be at most 1024 bytes")
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", fieldError("issuer_url", "must be an absolute URL such as https://login.example.com")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(s, "#") {
		return "", fieldError("issuer_url", "must not carry a user, query or fragment")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return "", fieldError("issuer_url", "must use https (http only to a loopback address)")
		}
	default:
		return "", fieldError("issuer_url", "must use https")
	}
	return s, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseScopes checks the scopes requested besides openid (RFC 6749 scope tokens,
// separated by spaces) and writes them one space apart, without openid and repeats.
func ParseScopes(s string) (string, error) {
	var out []string
	for _, sc := range strings.Fields(s) {
		for _, r := range sc {
			if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
				return "", fieldError("scopes", "use scope names of printable ASCII without quotes or backslashes, separated by spaces")
			}
		}
		if sc == "openid" || slices.Contains(out, sc) {
			continue
		}
		out = append(out, sc)
	}
	joined := strings.Join(out, " ")
	if len(joined) > 1024 {
		return "", fieldError("scopes", "must be at most 1024 bytes")
	}
	return joined, nil
}

// checkToken accepts a client ID or audience: printable ASCII without spaces.
func checkToken(field, s string) error {
	if len(s) > maxOIDCText {
		return fieldError(field, "must be at most 255 bytes")
	}
	for _, r := range s {
		if r < 0x21 || r > 0x7e {
			return fieldError(field, "must be printable ASCII without spaces")
		}
	}
	return nil
}
