package mime

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"wharf/internal/protocol/as2/cms"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func fixedBoundary() func() string {
	n := 0
	return func() string {
		n++
		return "BOUNDARY-" + string(rune('0'+n))
	}
}

// signatureBody matches the base64 content of a signature part, which
// changes with every signing time.
var signatureBody = regexp.MustCompile(`(filename="smime\.p7s"\r\n\r\n)[A-Za-z0-9+/=\r\n]+(--BOUNDARY)`)

func render(contentType string, header map[string][]string, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("Content-Type: " + contentType + "\r\n")
	var keys []string
	for k := range header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range header[k] {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	b.WriteString("\r\n")
	b.Write(signatureBody.ReplaceAll(body, []byte("${1}<signature>\r\n${2}")))
	return b.Bytes()
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGoldenMessages(t *testing.T) {
	partner := testIdentity(t, "partner")
	payload := []byte("ISA*00*          *00*          *ZZ*SENDER*ZZ*RECEIVER~\r\nIEA*1*000000001~\r\n")
	tests := []struct {
		name string
		opts BuildOptions
	}{
		{"build-plain", BuildOptions{ContentType: "application/EDI-X12"}},
		{"build-signed", BuildOptions{ContentType: "application/EDI-X12", Sign: partner.signer(cms.SHA256)}},
		{"build-signed-sha512", BuildOptions{ContentType: "application/edi-x12", Sign: partner.signer(cms.SHA512), MICAlgorithm: cms.SHA256}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.newBoundary = fixedBoundary()
			built, err := Build(payload, "invoice 0001.edi", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			out := render(built.ContentType, built.Header, built.Body)
			out = append(out, "\r\n# MIC: "+built.MIC.String()+"\r\n"...)
			checkGolden(t, tt.name, out)
		})
	}
}

func TestGoldenMDNs(t *testing.T) {
	ours := testIdentity(t, "ours")
	mic := ComputeMIC([]byte("the signed content"), cms.SHA256)
	base := MDN{
		ReportingUA:        "Wharf (AS2 id WHARF)",
		OriginalRecipient:  "WHARF",
		OriginalMessageID:  "<20261130092538+0000-680692-peera_gogw>",
		Disposition:        Processed(),
		ReceivedContentMIC: &mic,
	}
	failed := base
	failed.Disposition = ProcessedWith("error", "decryption-failed")
	failed.ReceivedContentMIC = nil
	injected := base
	injected.ReportingUA = "Wharf\r\nBcc: someone"
	tests := []struct {
		name string
		mdn  MDN
		sign *Signer
	}{
		{"mdn-processed", base, nil},
		{"mdn-decryption-failed", failed, nil},
		{"mdn-field-injection", injected, nil},
		{"mdn-signed", base, ours.signer(cms.SHA256)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, body, err := BuildMDN(tt.mdn, MDNBuildOptions{Sign: tt.sign, newBoundary: fixedBoundary()})
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tt.name, render(ct, nil, body))
		})
	}
}
