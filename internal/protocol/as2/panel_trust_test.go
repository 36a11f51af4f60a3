package as2

import (
	"testing"
	"time"

	"wharf/internal/certs"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
)

func TestPanelTrustTexts(t *testing.T) {
	id := int64(4)
	until := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
	names := namesOf([]certs.Choice{{ID: 3, Subject: "CN=Root A", NotAfter: until}, {ID: 4, Subject: "CN=mdn", NotAfter: until},
		{ID: 5, Subject: "CN=Root B", NotAfter: until}})
	for _, tt := range []struct {
		r    profile.Remote
		want string
	}{
		{profile.Remote{TLSTrust: profile.TLSTrustSystem}, "system roots"},
		{profile.Remote{TLSTrust: profile.TLSTrustSystem, TLSTrustCertificateIDs: []int64{3}}, "system roots and CN=Root A (until 2030-01-02)"},
		{profile.Remote{TLSTrust: profile.TLSTrustProfile, TLSTrustCertificateIDs: []int64{3, 5}}, "the profile's roots: CN=Root A (until 2030-01-02); CN=Root B (until 2030-01-02)"},
		{profile.Remote{TLSTrust: profile.TLSTrustPinned, TLSPinnedSHA256: "ab12"}, "pinned certificate SHA-256 ab12"},
	} {
		if got := trustText(tt.r, names); got != tt.want {
			t.Errorf("trustText(%s) = %q, want %q", tt.r.TLSTrust, got, tt.want)
		}
	}
	if got := mdnSignerText(profile.Local{}, names); got != "the signing certificate" {
		t.Errorf("no MDN signing certificate: %q", got)
	}
	if got := mdnSignerText(profile.Local{MDNSigningCertificateID: &id}, names); got != "CN=mdn (until 2030-01-02)" {
		t.Errorf("MDN signing certificate 4: %q", got)
	}
}

// The receiver's instance form offers the HTTPS listener's port beside the certificate.
func TestReceiverFormOffersTLSPort(t *testing.T) {
	specs, err := module.Describe(persistence.PluginAS2Receiver)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]module.FieldKind{}
	for _, s := range specs {
		kinds[s.Name] = s.Kind
	}
	if kinds["tls_port"] != module.KindInteger || kinds["tls_certificate_id"] != module.KindCertificate {
		t.Errorf("form kinds: tls_port %v, tls_certificate_id %v", kinds["tls_port"], kinds["tls_certificate_id"])
	}
}
