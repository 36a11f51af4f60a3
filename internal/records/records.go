// Package records holds the validation and write rules for the records an operator edits —
// parties, routes, plugin configs, settings — and for sending a message by hand. The REST
// API and the web UI both call these functions, so each rule lives in one place. Errors
// are domain errors: *persistence.FieldError (one, or several joined with errors.Join) for
// input naming its field, and the store's sentinels for the rest.
package records

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"wharf/internal/persistence"
)

// Store is what these rules read and write.
type Store interface {
	CreateParty(ctx context.Context, p persistence.Party) (persistence.Party, error)
	GetParty(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) (persistence.Party, error)
	UpdateParty(ctx context.Context, p persistence.Party) (persistence.Party, error)

	CreatePluginConfig(ctx context.Context, c persistence.PluginConfig) (persistence.PluginConfig, error)
	GetPluginConfig(ctx context.Context, name persistence.InstanceName) (persistence.PluginConfig, error)
	UpdatePluginConfig(ctx context.Context, c persistence.PluginConfig) (persistence.PluginConfig, error)
	GetCertificate(ctx context.Context, id int64) (persistence.Certificate, error)
	SetCertificateUses(ctx context.Context, kind, name string, ids []int64) error

	CreateRoute(ctx context.Context, r persistence.Route) (persistence.Route, error)
	GetRoute(ctx context.Context, id int64) (persistence.Route, error)
	UpdateRoute(ctx context.Context, r persistence.Route) (persistence.Route, error)
	ListRoutes(ctx context.Context) ([]persistence.Route, error)

	PutSetting(ctx context.Context, key, value string) error
	ListSettings(ctx context.Context) (map[string]string, error)

	CreateScopedAPIToken(ctx context.Context, name, hash string, target persistence.InstanceName) (persistence.APIToken, error)
}

var _ Store = persistence.Store(nil)

// MaxDisplayNameLen bounds a display name, in characters.
const MaxDisplayNameLen = 200

// ParseDisplayName trims a display name and checks it: at most MaxDisplayNameLen
// characters of UTF-8, no control characters. An empty name is allowed.
func ParseDisplayName(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return "", fieldError("display_name", "must be UTF-8 text")
	}
	if n := utf8.RuneCountInString(s); n > MaxDisplayNameLen {
		return "", fieldError("display_name", "must be at most 200 characters")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "", fieldError("display_name", "must not contain control characters")
		}
	}
	return s, nil
}

func fieldError(field, msg string) *persistence.FieldError {
	return &persistence.FieldError{Field: field, Message: msg}
}
