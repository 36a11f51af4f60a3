package mime

import (
	"crypto/x509"
	"errors"
	"testing"

	"wharf/internal/protocol/as2/cms"
)

func TestMDNRoundTrip(t *testing.T) {
	ours, other := testIdentity(t, "ours"), testIdentity(t, "other")
	mic := ComputeMIC([]byte("signed part"), cms.SHA384)
	mic.Name = "sha384"
	tests := []struct {
		name string
		mdn  MDN
		sign *Signer
	}{
		{"processed signed", MDN{ReportingUA: "Wharf", OriginalRecipient: "WHARF ID", OriginalMessageID: "<a@b>", Disposition: Processed(), ReceivedContentMIC: &mic}, ours.signer(cms.SHA256)},
		{"error unsigned", MDN{OriginalRecipient: "WHARF", OriginalMessageID: "<c@d>", Disposition: ProcessedWith("error", "authentication-failed")}, nil},
		{"warning pss", MDN{OriginalMessageID: "<e@f>", Disposition: ProcessedWith("warning", "duplicate-document"), Text: "seen before\nline two"},
			&Signer{Certificate: ours.cert, Key: ours.key, Digest: cms.SHA512, PSS: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, body, err := BuildMDN(tt.mdn, MDNBuildOptions{Sign: tt.sign})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseMDN(ct, body, MDNParseOptions{PartnerCertificates: []*x509.Certificate{ours.cert}, RequireSigned: tt.sign != nil})
			if err != nil {
				t.Fatal(err)
			}
			if got.Signed != (tt.sign != nil) || got.OriginalMessageID != tt.mdn.OriginalMessageID ||
				got.Disposition != tt.mdn.Disposition || got.OriginalRecipient != tt.mdn.OriginalRecipient {
				t.Errorf("parsed %+v", got)
			}
			if (got.ReceivedContentMIC == nil) != (tt.mdn.ReceivedContentMIC == nil) ||
				got.ReceivedContentMIC != nil && (!got.ReceivedContentMIC.Equal(mic) || got.RawMIC != mic.String()) {
				t.Errorf("MIC %v (%q), want %v", got.ReceivedContentMIC, got.RawMIC, tt.mdn.ReceivedContentMIC)
			}
			if got.Disposition.Successful() != (tt.mdn.Disposition.ModifierKind() != "error") {
				t.Errorf("Successful() = %v for %s", got.Disposition.Successful(), got.Disposition)
			}
			if tt.sign != nil {
				if _, err := ParseMDN(ct, body, MDNParseOptions{PartnerCertificates: []*x509.Certificate{other.cert}}); !errors.Is(err, cms.ErrAuthentication) {
					t.Errorf("MDN verified with another certificate: %v", err)
				}
			} else if _, err := ParseMDN(ct, body, MDNParseOptions{RequireSigned: true}); !errors.Is(err, cms.ErrAuthentication) {
				t.Errorf("unsigned MDN accepted where a signed one is required: %v", err)
			}
		})
	}
}

func TestParseMDNRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ ct, body string }{
		"not a report":    {"text/plain", "hello"},
		"no notification": {`multipart/report; boundary="b"`, "--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n--b--\r\n"},
		"bad disposition": {`multipart/report; boundary="b"`, "--b\r\nContent-Type: message/disposition-notification\r\n\r\nDisposition: processed\r\n--b--\r\n"},
		"unterminated":    {`multipart/report; boundary="b"`, "--b\r\nContent-Type: message/disposition-notification\r\n\r\n"},
	} {
		if _, err := ParseMDN(tc.ct, []byte(tc.body), MDNParseOptions{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseDisposition(t *testing.T) {
	tests := []struct {
		in   string
		want Disposition
		ok   bool
	}{
		{"automatic-action/MDN-sent-automatically; processed", Processed(), true},
		{"Automatic-Action/MDN-Sent-Automatically; Processed/Error: decryption-failed",
			Disposition{"automatic-action", "MDN-Sent-Automatically", "processed", "Error: decryption-failed"}, false},
		{"automatic-action/MDN-sent-automatically; processed/warning: duplicate-document",
			Disposition{"automatic-action", "MDN-sent-automatically", "processed", "warning: duplicate-document"}, true},
		{"automatic-action/MDN-sent-automatically; failed/failure: unsupported MIC-algorithms",
			Disposition{"automatic-action", "MDN-sent-automatically", "failed", "failure: unsupported MIC-algorithms"}, false},
	}
	for _, tt := range tests {
		got, err := ParseDisposition(tt.in)
		if err != nil || got != tt.want || got.Successful() != tt.ok {
			t.Errorf("ParseDisposition(%q) = %+v, %v", tt.in, got, err)
		}
	}
	if d, _ := ParseDisposition(tests[1].in); d.ModifierKind() != "error" || d.ModifierText() != "decryption-failed" {
		t.Errorf("modifier %q %q", d.ModifierKind(), d.ModifierText())
	}
}
