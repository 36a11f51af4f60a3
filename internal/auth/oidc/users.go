package oidc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/records"
)

// UserStore finds and creates the users of OIDC identities.
type UserStore interface {
	GetUserByOIDC(ctx context.Context, issuer, subject string) (persistence.User, error)
	CreateUser(ctx context.Context, u persistence.User) (persistence.User, error)
}

// ErrDisabled is an identity whose user is disabled.
var ErrDisabled = errors.New("the user is disabled")

// SignInUser returns the user of id, found by issuer and subject only (never by name or
// e-mail, which another provider's user could claim), creating an operator on the first
// sign-in. The creation is audited as made by "oidc:<provider>". A disabled user is
// ErrDisabled.
func SignInUser(ctx context.Context, st UserStore, provider string, id Identity) (persistence.User, error) {
	u, err := st.GetUserByOIDC(ctx, id.Issuer, id.Subject)
	if errors.Is(err, persistence.ErrNotFound) {
		u, err = createUser(audit.WithActor(ctx, "oidc:"+provider), st, id)
	}
	if err != nil {
		return persistence.User{}, err
	}
	if u.Disabled {
		return persistence.User{}, fmt.Errorf("user %s: %w", u.Name, ErrDisabled)
	}
	return u, nil
}

// maxNameTries bounds the suffixes tried for a taken user name.
const maxNameTries = 100

func createUser(ctx context.Context, st UserStore, id Identity) (persistence.User, error) {
	base := BaseUserName(id)
	display, err := records.ParseDisplayName(id.Name)
	if err != nil {
		display = ""
	}
	for i := 1; i <= maxNameTries; i++ {
		name := base
		if i > 1 {
			suffix := "-" + strconv.Itoa(i)
			name = base[:min(len(base), 64-len(suffix))] + suffix
		}
		u, err := st.CreateUser(ctx, persistence.User{Name: persistence.UserName(name), DisplayName: display,
			Role: persistence.RoleOperator, OIDCIssuer: id.Issuer, OIDCSubject: id.Subject})
		if err == nil {
			return u, nil
		}
		if !errors.Is(err, persistence.ErrConflict) {
			return persistence.User{}, err
		}
		// A concurrent first sign-in of the same identity may have created it.
		if u, err := st.GetUserByOIDC(ctx, id.Issuer, id.Subject); err == nil {
			return u, nil
		}
	}
	return persistence.User{}, fmt.Errorf("create a user for %s: the names %s to %s-%d are taken: %w", id.Subject, base, base, maxNameTries, persistence.ErrConflict)
}

// BaseUserName derives a valid user name from the preferred_username claim, else the
// e-mail's local part: lower case, characters outside a-z, 0-9, _, . and - as "-", at
// most 64 characters; "sso-user" when nothing is left.
func BaseUserName(id Identity) string {
	src := id.PreferredUsername
	if src == "" {
		src, _, _ = strings.Cut(id.Email, "@")
	}
	var b strings.Builder
	for _, r := range strings.ToLower(src) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		case unicode.IsSpace(r) || r == '@' || r < unicode.MaxASCII:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-.")
	if len(name) > 64 {
		name = strings.Trim(name[:64], "-.")
	}
	if name == "" {
		return "sso-user"
	}
	return name
}
