package cms

import (
	"encoding/asn1"
	"errors"
	"strings"
	"testing"
)

// A signature with a digest Wharf does not verify is refused naming the digest, not only
// its OID, and the digests that would do: pyas2-lib offers MD5 and SHA-224.
func TestUnsupportedDigestIsNamed(t *testing.T) {
	tests := []struct {
		oid  asn1.ObjectIdentifier
		want string
	}{
		{asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 5}, "MD5 (1.2.840.113549.2.5)"},
		{asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 4}, "SHA-224 (2.16.840.1.101.3.4.2.4)"},
		{asn1.ObjectIdentifier{1, 2, 3, 4}, "1.2.3.4"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := digestForOID(tt.oid)
			if !errors.Is(err, ErrUnsupportedAlgorithm) {
				t.Fatalf("err = %v, want ErrUnsupportedAlgorithm", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "digest algorithm "+tt.want) || !strings.Contains(msg, "SHA-256, SHA-384 or SHA-512") {
				t.Errorf("err = %q, want it to name %s and the digests accepted", msg, tt.want)
			}
		})
	}
}
