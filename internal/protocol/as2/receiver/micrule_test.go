package receiver

import (
	"net/http"
	"strings"
	"testing"

	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// The MIC rule follows the partner profile, and for auto the product recognised from the
// request's header fields (the marks the interop corpus shows), else the requested
// algorithm.
func TestChooseMICRule(t *testing.T) {
	const (
		dashed   = "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256"
		hashlib  = "signed-receipt-protocol=required, pkcs7-signature; signed-receipt-micalg=optional, sha256"
		pythonID = "<179603083596.16311.2375965411303868142@localhost>"
		otherID  = "<wharf-1-2-abc@wharf.test>"
	)
	const openAS2 = "OpenAS2 Server v4.9.0 (class org.openas2.processor.sender.AS2SenderModule)"
	// request is what the rule reads: User-Agent, AS2-Version, Disposition-Notification-
	// Options and Message-ID.
	type request struct{ ua, version, options, id string }
	tests := []struct {
		name    string
		pref    profile.MICPreference
		req     request
		want    mime.MICPreference
		wantWhy string
	}{
		{"OpenAS2 by User-Agent", profile.MICPreferAuto, request{openAS2, "1.1", dashed, "<20261130092701+0000-315195-peera_gogw>"},
			mime.MICRequested, "requested algorithm (auto: OpenAS2 recognised by its User-Agent)"},
		{"pyas2-lib by its headers", profile.MICPreferAuto, request{"", "1.2", hashlib, pythonID},
			mime.MICSignatureDigest, "signature's digest (auto: pyas2-lib recognised by its headers"},
		{"django-pyas2 by User-Agent", profile.MICPreferAuto, request{"pyAS2 Open Source AS2 Software", "1.2", dashed, otherID},
			mime.MICSignatureDigest, "signature's digest (auto: pyas2 recognised by its User-Agent)"},
		{"OpenAS2 over pyas2-lib's spellings", profile.MICPreferAuto, request{"OpenAS2 Server", "1.2", hashlib, pythonID},
			mime.MICRequested, "requested algorithm (auto: OpenAS2 recognised"},
		// pyas2-lib leaves HTTP to the application: django-pyas2 posts with requests, a
		// small wrapper with urllib, each adding its library's User-Agent.
		{"pyas2-lib behind python-requests", profile.MICPreferAuto, request{"python-requests/2.31.0", "1.2", hashlib, pythonID},
			mime.MICSignatureDigest, "signature's digest (auto: pyas2-lib recognised by its headers (User-Agent python-requests/2.31.0 of a Python HTTP library,"},
		{"pyas2-lib behind urllib", profile.MICPreferAuto, request{"Python-urllib/3.11", "1.2", hashlib, pythonID},
			mime.MICSignatureDigest, "signature's digest (auto: pyas2-lib recognised by its headers (User-Agent Python-urllib/3.11 of a Python HTTP library,"},
		{"Python HTTP library, RFC spelling", profile.MICPreferAuto, request{"python-requests/2.31.0", "1.2", dashed, pythonID},
			mime.MICRequested, "requested algorithm (auto: no known product recognised)"},
		{"hashlib spelling alone", profile.MICPreferAuto, request{"", "1.2", hashlib, otherID},
			mime.MICRequested, "requested algorithm (auto: no known product recognised)"},
		{"Python Message-ID, RFC spelling", profile.MICPreferAuto, request{"", "1.2", dashed, pythonID},
			mime.MICRequested, "requested algorithm (auto: no known product recognised)"},
		{"another product's User-Agent", profile.MICPreferAuto, request{"Mendelson AS2", "1.2", hashlib, pythonID},
			mime.MICRequested, "requested algorithm (auto: no known product recognised)"},
		{"AS2-Version 1.1 with pyas2-lib's spellings", profile.MICPreferAuto, request{"", "1.1", hashlib, pythonID},
			mime.MICRequested, "requested algorithm (auto: no known product recognised)"},
		{"profile says requested", profile.MICPreferRequested, request{"", "1.2", hashlib, pythonID},
			mime.MICRequested, "requested algorithm (partner profile: requested)"},
		{"profile says signature", profile.MICPreferSignature, request{openAS2, "1.1", dashed, otherID},
			mime.MICSignatureDigest, "signature's digest (partner profile: signature)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("Content-Type", "application/pkcs7-mime")
			h.Set("AS2-From", "partner")
			h.Set("AS2-To", "us")
			h.Set("Disposition-Notification-To", "partner@example.invalid")
			h.Set("AS2-Version", tt.req.version)
			h.Set("Disposition-Notification-Options", tt.req.options)
			h.Set("Message-ID", tt.req.id)
			if tt.req.ua != "" {
				h.Set("User-Agent", tt.req.ua)
			}
			env, err := readEnvelope(h, 100)
			if err != nil {
				t.Fatal(err)
			}
			got := chooseMICRule(tt.pref, env)
			if got.pref != tt.want || !strings.HasPrefix(got.why, tt.wantWhy) {
				t.Errorf("rule %v %q, want %v %q", got.pref, got.why, tt.want, tt.wantWhy)
			}
		})
	}
}
