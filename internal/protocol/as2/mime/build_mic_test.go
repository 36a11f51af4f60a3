package mime

import (
	"bytes"
	"crypto/x509"
	"testing"

	"wharf/internal/protocol/as2/cms"
)

// The MIC a sender expects follows RFC 4130 7.3.1 as the receivers in the interop corpus
// compute it: the content alone for a message neither signed nor encrypted, compressed
// or not (OpenAS2, ob-10), and the entity with its headers once it is encrypted.
func TestBuildMICCoverage(t *testing.T) {
	ours := testIdentity(t, "ours")
	payload := bytes.Repeat([]byte("sku;qty\n"), 500)
	encrypt := &Encryption{Recipients: []*x509.Certificate{ours.cert}}
	tests := []struct {
		name        string
		opts        BuildOptions
		contentOnly bool
	}{
		{"plain", BuildOptions{}, true},
		{"compressed only", BuildOptions{Compress: true}, true},
		{"encrypted", BuildOptions{Encrypt: encrypt}, false},
		{"compressed and encrypted", BuildOptions{Compress: true, Encrypt: encrypt}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.ContentType = "text/csv"
			built, err := Build(payload, "stock.csv", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			withHeaders := !bytes.Equal(built.MICContent, payload)
			if withHeaders == tt.contentOnly {
				t.Fatalf("MIC content of %d bytes (payload %d): content only = %v, want %v",
					len(built.MICContent), len(payload), !withHeaders, tt.contentOnly)
			}
			if withHeaders && (!bytes.HasPrefix(built.MICContent, []byte("Content-Type: text/csv\r\n")) || !bytes.HasSuffix(built.MICContent, payload)) {
				t.Errorf("MIC content is not the entity:\n%.200s", built.MICContent)
			}
			if want := ComputeMIC(built.MICContent, cms.SHA256); !built.MIC.Equal(want) {
				t.Errorf("MIC %s, want %s", built.MIC, want)
			}
			streamed, err := BuildFrom(bytes.NewReader(payload), int64(len(payload)), "stock.csv", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !streamed.MIC.Equal(built.MIC) {
				t.Errorf("streamed MIC %s, built %s", streamed.MIC, built.MIC)
			}
		})
	}
}
