package certs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"wharf/internal/persistence"
)

// Choice is a stored certificate as a form offers it: never a bare id, always the
// subject, expiry and what uses it.
type Choice struct {
	ID       int64
	Role     Role
	Subject  string
	NotAfter time.Time
	Label    string
}

// ChoiceSource lists certificates and the records that use each.
type ChoiceSource interface {
	Lister
	ListCertificateUses(ctx context.Context, id int64) ([]persistence.CertificateUse, error)
}

// Choices lists every stored certificate (soonest expiry first) labelled for a select.
func Choices(ctx context.Context, st ChoiceSource, now time.Time) ([]Choice, error) {
	list, _, err := st.ListCertificates(ctx, persistence.ListOptions{Limit: maxListed})
	if err != nil {
		return nil, fmt.Errorf("list certificates: %w", err)
	}
	out := make([]Choice, 0, len(list))
	for _, c := range list {
		uses, err := st.ListCertificateUses(ctx, c.ID)
		if err != nil {
			return nil, fmt.Errorf("list the uses of certificate %d: %w", c.ID, err)
		}
		out = append(out, Choice{ID: c.ID, Role: RoleOf(c), Subject: c.Subject, NotAfter: c.NotAfter, Label: ChoiceLabel(c, uses, now)})
	}
	return out, nil
}

// ChoiceLabel names a certificate in one line: subject, expiry, role and users, such as
// "CN=wharf,O=Example · expires 2027-03-01 · Ours, with key · used by local".
func ChoiceLabel(c persistence.Certificate, uses []persistence.CertificateUse, now time.Time) string {
	expiry := "expires " + c.NotAfter.UTC().Format(time.DateOnly)
	if !c.NotAfter.After(now) {
		expiry = "EXPIRED " + c.NotAfter.UTC().Format(time.DateOnly)
	}
	parts := []string{c.Subject, expiry, RoleOf(c).Label()}
	if len(uses) > 0 {
		names := make([]string, 0, len(uses))
		seen := map[string]bool{}
		for _, u := range uses {
			if !seen[u.Name] {
				seen[u.Name] = true
				names = append(names, u.Name)
			}
		}
		parts = append(parts, "used by "+strings.Join(names, ", "))
	}
	return strings.Join(parts, " · ")
}
