package receiver

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/mime"
)

// signWithWrongProtection signs content as the partner (SHA-256 with RSA) with an RFC
// 6211 attribute that names SHA-512 as the digest: what a signature whose unsigned
// algorithm identifiers were changed after signing looks like.
func signWithWrongProtection(t testing.TB, content []byte, signer party) []byte {
	t.Helper()
	protection, err := asn1.Marshal(struct {
		Digest    pkix.AlgorithmIdentifier
		Signature pkix.AlgorithmIdentifier `asn1:"tag:1"`
	}{
		pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 3}}, // SHA-512
		pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 11}},    // SHA-256 with RSA
	})
	if err != nil {
		t.Fatal(err)
	}
	return as2test.PKCS7Sign(t, content, signer.cert, signer.key, nil, asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}, protection)
}

// Our MDN signature carries the RFC 6211 attribute when the partner's profile asks for
// it (profile.Dir copies algorithm_protection onto the signer), and not otherwise.
func TestMDNAlgorithmProtection(t *testing.T) {
	org := testParty(t, "wharf")
	payload := []byte("UNH+1+ORDERS:D:96A:UN'\r\n")
	plain, protected := testParty(t, "acme"), testParty(t, "globex")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{plain, protected})
		dir := newDirectory()
		dir.add(inbound(org, plain, nil))
		in := inbound(org, protected, nil)
		in.Signer.AlgorithmProtection = true
		dir.add(in)
		rc := b.start("as2_in", dir, nil)
		for _, tt := range []struct {
			partner party
			protect bool
		}{{plain, false}, {protected, true}} {
			t.Run(string(tt.partner.name), func(t *testing.T) {
				opts := secureOpts(tt.partner, org)
				opts.Sign.AlgorithmProtection = !tt.protect // what the partner does is its own choice
				r := build(t, tt.partner, org, payload, "orders.edi", opts)
				m := parseMDN(t, post(t, rc.url(), r.contentType, r.header, r.body), org.cert)
				if m.Disposition.String() != mime.Processed().String() || !m.Signed {
					t.Fatalf("MDN %s, signed %v", m.Disposition, m.Signed)
				}
				if m.Signer.AlgorithmProtection != tt.protect {
					t.Errorf("MDN signature with algorithm protection %v, want %v", m.Signer.AlgorithmProtection, tt.protect)
				}
			})
		}
	})
}
