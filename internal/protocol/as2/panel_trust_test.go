package as2

import (
	"testing"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
)

func TestPanelTrustTexts(t *testing.T) {
	id := int64(4)
	for _, tt := range []struct {
		r    profile.Remote
		want string
	}{
		{profile.Remote{TLSTrust: profile.TLSTrustSystem}, "system roots"},
		{profile.Remote{TLSTrust: profile.TLSTrustSystem, TLSTrustCertificateIDs: []int64{3}}, "system roots and #3"},
		{profile.Remote{TLSTrust: profile.TLSTrustProfile, TLSTrustCertificateIDs: []int64{3, 5}}, "the profile's roots #3, #5"},
		{profile.Remote{TLSTrust: profile.TLSTrustPinned, TLSPinnedSHA256: "ab12"}, "pinned certificate SHA-256 ab12"},
	} {
		if got := trustText(tt.r); got != tt.want {
			t.Errorf("trustText(%s) = %q, want %q", tt.r.TLSTrust, got, tt.want)
		}
	}
	if got := mdnSignerText(profile.Local{}); got != "the signing certificate" {
		t.Errorf("no MDN signing certificate: %q", got)
	}
	if got := mdnSignerText(profile.Local{MDNSigningCertificateID: &id}); got != "#4" {
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
