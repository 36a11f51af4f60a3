package as2

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"wharf/internal/certs"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// An organization's AS2 identity is one form: the local profile's own-key selects offer a
// key pair made when the form is saved, chosen while the gateway holds no key of its own;
// when it holds exactly one, that one is chosen.

// newKeyChoice is the select value that asks for a new key pair.
const newKeyChoice = "generate"

// ownKeyFields are the local profile's fields a new key pair fills.
var ownKeyFields = []string{"signing_certificate_id", "decryption_certificate_id"}

// newKeyRequest is the key pair the form makes: named by the AS2 id, of the default kind.
func newKeyRequest(org persistence.PartyName, as2ID string) certs.GenerateRequest {
	return certs.GenerateRequest{Algorithm: certs.AllKeyAlgorithms[0], Subject: certs.Subject{CommonName: as2ID},
		ValidityDays: certs.DefaultValidityDays, Description: "AS2 key pair of " + string(org)}
}

// offerNewKey adds the new-key choice to the own-key selects and, for a profile not yet
// stored, pre-chooses the one sensible certificate.
func offerNewKey(fields []module.PanelField, choices []certs.Choice, creating bool) []module.PanelField {
	var ours []certs.Choice
	for _, c := range choices {
		if c.Role == certs.RoleOurs {
			ours = append(ours, c)
		}
	}
	label := fmt.Sprintf("A new key pair, made on saving (self-signed, %d days)", certs.DefaultValidityDays)
	for i, f := range fields {
		if !slices.Contains(ownKeyFields, f.Name) {
			continue
		}
		fields[i].Choices = append(f.Choices, module.PanelChoice{Value: newKeyChoice, Label: label})
		if !creating {
			continue
		}
		switch len(ours) {
		case 0:
			fields[i].Value = newKeyChoice
		case 1:
			fields[i].Value = strconv.FormatInt(ours[0].ID, 10)
		}
	}
	return fields
}

// saveLocalPanel saves the organization's local profile form, first making the key pair
// it asks for. The form is checked before the key is made, and the key is removed again
// when the profile is refused after all, so nothing half-made stays.
func (rt *Runtime) saveLocalPanel(ctx context.Context, org persistence.PartyName, form url.Values) error {
	var fill []string
	for _, f := range ownKeyFields {
		if form.Get(f) == newKeyChoice {
			fill = append(fill, f)
		}
	}
	if len(fill) == 0 {
		_, err := rt.profiles.SaveLocalForm(ctx, org, form)
		return err
	}
	form = cloneForm(form)
	for _, f := range fill {
		form.Set(f, "0")
	}
	if err := rt.profiles.CheckLocalForm(ctx, org, form); err != nil {
		return err
	}
	req := newKeyRequest(org, strings.TrimSpace(form.Get("as2_id")))
	var fe *persistence.FieldError
	if err := req.Check(); errors.As(err, &fe) {
		return &persistence.FieldError{Field: "as2_id", Message: "The new key pair is named by the AS2 id: " + fe.Message}
	} else if err != nil {
		return err
	}
	c, err := certs.GenerateStored(ctx, rt.core.Store, rt.core.Sealer, req, time.Now())
	if err != nil {
		return fmt.Errorf("generate the key pair of %s: %w", org, err)
	}
	for _, f := range fill {
		form.Set(f, strconv.FormatInt(c.ID, 10))
	}
	if _, err := rt.profiles.SaveLocalForm(ctx, org, form); err != nil {
		if derr := rt.core.Store.DeleteCertificate(ctx, c.ID); derr != nil {
			return errors.Join(err, fmt.Errorf("remove the unused key pair %d: %w", c.ID, derr))
		}
		return err
	}
	return nil
}

func cloneForm(form url.Values) url.Values {
	out := make(url.Values, len(form))
	for k, v := range form {
		out[k] = slices.Clone(v)
	}
	return out
}
