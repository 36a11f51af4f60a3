package profile

import (
	"strconv"

	"wharf/internal/certs"
	"wharf/internal/module"
)

// certPick is how a form field picks stored certificates.
type certPick struct {
	// ours offers certificates with our private key; otherwise those without.
	ours bool
	// multiple picks several (a list of ids).
	multiple bool
	// roots puts authorities' certificates first (TLS trust).
	roots bool
	// none is the value of the "no certificate" option and noneLabel its label; a
	// multiple select has none.
	none, noneLabel string
}

func (p certPick) set() bool { return p.ours || p.multiple }

// CertificateSelects turns the certificate fields of a profile form (LocalFields,
// RemoteFields) into selects of the stored certificates that fit each: our own with
// their keys for signing and decryption, the others for partner certificates and TLS
// roots. Each option shows subject, expiry and use; the value sent is the id, so the
// form still turns into the same REST body.
func CertificateSelects(fields []module.PanelField, choices []certs.Choice) []module.PanelField {
	picks := map[string]certPick{}
	for _, spec := range [][]formField{localForm, remoteForm} {
		for _, f := range spec {
			if f.pick.set() {
				picks[f.name] = f.pick
			}
		}
	}
	out := make([]module.PanelField, len(fields))
	for i, f := range fields {
		out[i] = f
		if p, ok := picks[f.Name]; ok {
			out[i] = p.apply(f, choices)
		}
	}
	return out
}

func (p certPick) apply(f module.PanelField, choices []certs.Choice) module.PanelField {
	f.Kind, f.Multiple, f.Options = module.FieldSelect, p.multiple, nil
	f.Choices = nil
	if !p.multiple {
		f.Choices = append(f.Choices, module.PanelChoice{Value: p.none, Label: p.noneLabel})
	}
	offered := map[string]bool{}
	add := func(c certs.Choice, group string) {
		v := strconv.FormatInt(c.ID, 10)
		offered[v] = true
		f.Choices = append(f.Choices, module.PanelChoice{Value: v, Label: c.Label, Group: group})
	}
	groups := []struct {
		label string
		role  certs.Role
	}{{"Partner certificates", certs.RolePartner}, {"TLS roots and CAs", certs.RoleTLSRoot}}
	if p.roots {
		groups[0], groups[1] = groups[1], groups[0]
	}
	if p.ours {
		groups = groups[:0]
		for _, c := range choices {
			if c.Role == certs.RoleOurs {
				add(c, "")
			}
		}
	}
	for _, g := range groups {
		for _, c := range choices {
			if c.Role == g.role {
				add(c, g.label)
			}
		}
	}
	// A stored value the select does not offer stays selectable, so saving the form
	// never drops it unseen; the store's rules judge it.
	for _, v := range splitList(f.Value) {
		if v != p.none && !offered[v] {
			f.Choices = append(f.Choices, module.PanelChoice{Value: v, Label: "Certificate " + v + " (does not fit this field)", Group: "Not offered"})
		}
	}
	return f
}
