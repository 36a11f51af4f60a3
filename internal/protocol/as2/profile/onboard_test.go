package profile

import (
	"crypto/x509"
	"errors"
	"slices"
	"strings"
	"testing"

	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
)

// counts are the partners and certificates stored, to see that a refusal wrote nothing.
func (e *env) counts() (partners, certificates int) {
	e.t.Helper()
	_, p, err := e.core.ListParties(e.ctx, persistence.PartyPartner, persistence.ListOptions{Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	_, c, err := e.core.ListCertificates(e.ctx, persistence.ListOptions{Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return p, c
}

func TestOnboardFromProfileFile(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		obj, sign, enc := sampleFile(t)
		pf, err := ParsePartnerFile(marshalFile(t, obj))
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.store.Onboard(e.ctx, NewPartner{File: &pf, Preset: PresetOpenAS2})
		if err != nil {
			t.Fatal(err)
		}
		if out.Party.Name != "acme-as2" || out.Party.DisplayName != "ACME Corp" {
			t.Errorf("party = %+v, want acme-as2 named after the AS2 id, displayed as the file says", out.Party)
		}
		r, err := e.store.GetRemote(e.ctx, "acme-as2")
		if err != nil {
			t.Fatal(err)
		}
		if r.AS2ID != "ACME AS2" || r.EndpointURL != "https://as2.acme.example:8443/as2" || r.SigningAlgorithm != SignSHA384 || r.MDNMode != MDNAsync {
			t.Errorf("remote = %+v", r)
		}
		// The preset comes after the file's preferences.
		if r.DuplicateContent != DuplicateRefuse || r.MICPreference != MICPreferRequested || r.EncryptionAlgorithm != EncryptAES256CBC {
			t.Errorf("the OpenAS2 preset is not applied: %+v", r)
		}
		var prints []string
		for _, id := range r.PartnerCertificateIDs {
			c, err := e.core.GetCertificate(e.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if c.HasPrivateKey {
				t.Errorf("certificate %d has a key", id)
			}
			prints = append(prints, c.Fingerprint)
		}
		slices.Sort(prints)
		want := []string{CertificateFingerprint(sign.Cert.Raw), CertificateFingerprint(enc.Cert.Raw)}
		slices.Sort(want)
		if !slices.Equal(prints, want) {
			t.Errorf("partner certificates %v, want %v", prints, want)
		}
		if got := e.uses(r.PartnerCertificateIDs[0]); !slices.Equal(got, []string{UseRemoteProfile + ":acme-as2"}) {
			t.Errorf("uses = %v", got)
		}
	})
}

func TestOnboardTyped(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		_, theirs := rsaKeys(t)
		leaf := certstest.ValidLeaf(t, e.ca, "Globex", theirs)
		// A certificate stored already is named, not stored twice.
		before := e.storeCA(leaf)
		out, err := e.store.Onboard(e.ctx, NewPartner{Name: "globex", AS2ID: "GLOBEX", EndpointURL: "http://globex.example/as2",
			Certificate: certstest.CertsPEM(leaf.Cert)})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.CertificateIDs, []int64{before}) || out.Remote.AS2ID != "GLOBEX" || out.Party.Name != "globex" {
			t.Errorf("onboarded = %+v", out)
		}
		if out.Remote.SigningAlgorithm != SignSHA256 || !out.Remote.RequireEncrypted {
			t.Errorf("without a preset the defaults hold: %+v", out.Remote)
		}
	})
}

func TestOnboardRefusals(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		e.mustCreate(w)
		_, theirs := rsaKeys(t)
		leaf := certstest.ValidLeaf(t, e.ca, "Initech", theirs)
		certPEM := certstest.CertsPEM(leaf.Cert)
		own, err := e.core.GetCertificate(e.ctx, w.ourCert)
		if err != nil {
			t.Fatal(err)
		}
		obj, _, _ := sampleFile(t)
		pf, err := ParsePartnerFile(marshalFile(t, obj))
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name   string
			in     NewPartner
			fields []string
		}{
			{"everything missing", NewPartner{}, []string{"name", "as2_id", "endpoint_url", "certificate"}},
			{"no name from the AS2 id", NewPartner{AS2ID: "--", EndpointURL: "http://x/as2", Certificate: certPEM}, []string{"name"}},
			{"bad values", NewPartner{Name: "Initech!", AS2ID: `x"y`, EndpointURL: "ftp://x", Certificate: certPEM}, []string{"name", "as2_id", "endpoint_url"}},
			{"name taken", NewPartner{Name: "acme", AS2ID: "INITECH", EndpointURL: "http://x/as2", Certificate: certPEM}, []string{"name"}},
			{"AS2 id taken", NewPartner{Name: "initech", AS2ID: "ACME", EndpointURL: "http://x/as2", Certificate: certPEM}, []string{"as2_id"}},
			{"a private key", NewPartner{Name: "initech", AS2ID: "INITECH", EndpointURL: "http://x/as2",
				Certificate: append(certPEM, certstest.KeyPEM(t, theirs, "pkcs8")...)}, []string{"certificate"}},
			{"our own certificate", NewPartner{Name: "initech", AS2ID: "INITECH", EndpointURL: "http://x/as2",
				Certificate: certstest.CertsPEM(mustParse(t, own.DER))}, []string{"certificate"}},
			{"not a certificate", NewPartner{Name: "initech", AS2ID: "INITECH", EndpointURL: "http://x/as2", Certificate: []byte("hello")}, []string{"certificate"}},
			{"file and typed values", NewPartner{File: &pf, AS2ID: "INITECH"}, []string{"profile_file"}},
			{"unknown preset", NewPartner{Name: "initech", AS2ID: "INITECH", EndpointURL: "http://x/as2", Certificate: certPEM, Preset: "x"}, []string{"preset"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p0, c0 := e.counts()
				_, err := e.store.Onboard(e.ctx, tt.in)
				if err == nil {
					t.Fatal("accepted")
				}
				for _, f := range tt.fields {
					if !hasField(err, f) {
						t.Errorf("no error for %s in %v", f, err)
					}
				}
				if p1, c1 := e.counts(); p1 != p0 || c1 != c0 {
					t.Errorf("a refusal wrote: partners %d→%d, certificates %d→%d", p0, p1, c0, c1)
				}
			})
		}
		// A write that fails after the party and the certificate are stored removes them.
		p0, c0 := e.counts()
		e.sql.failWrite.Store(true)
		_, err = e.store.Onboard(e.ctx, NewPartner{Name: "initech", AS2ID: "INITECH", EndpointURL: "http://x/as2", Certificate: certPEM})
		e.sql.failWrite.Store(false)
		if !errors.Is(err, errWriteRefused) {
			t.Fatalf("err = %v", err)
		}
		if p1, c1 := e.counts(); p1 != p0 || c1 != c0 {
			t.Errorf("a failed onboarding left: partners %d→%d, certificates %d→%d", p0, p1, c0, c1)
		}
	})
}

func mustParse(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hasField(err error, field string) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if hasField(e, field) {
				return true
			}
		}
		return false
	}
	var fe *persistence.FieldError
	return errors.As(err, &fe) && fe.Field == field
}

func TestSuggestPartyName(t *testing.T) {
	for _, tt := range []struct{ as2ID, name, want string }{
		{"ACME AS2", "local", "acme-as2"},
		{"  ", "Globex", "globex"},
		{"--", "", ""},
		{"a.b@c", "", "a-b-c"},
		{strings.Repeat("X", 130), "", strings.Repeat("x", 64)},
	} {
		if got := SuggestPartyName(tt.as2ID, tt.name); got != tt.want {
			t.Errorf("SuggestPartyName(%q, %q) = %q, want %q", tt.as2ID, tt.name, got, tt.want)
		}
	}
}
