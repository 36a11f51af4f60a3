package cms_test

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"testing"
	"time"

	"wharf/internal/certs"
	"wharf/internal/protocol/as2/cms"
)

// A key pair generated in the UI or over REST signs and verifies AS2 messages, and an RSA
// one also receives encrypted messages.
func TestGeneratedKeysSignAndDecrypt(t *testing.T) {
	content := []byte("Content-Type: application/edi-x12\r\n\r\nISA*00*generated~\r\n")
	for _, alg := range certs.AllKeyAlgorithms {
		t.Run(string(alg), func(t *testing.T) {
			p, err := certs.Generate(certs.GenerateRequest{Algorithm: alg, ValidityDays: 30,
				Subject: certs.Subject{CommonName: "generated " + string(alg)}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			sig, err := cms.SignDetached(content, p.Cert, p.Key, nil, cms.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cms.VerifyDetached(sig, content, []*x509.Certificate{p.Cert}, cms.VerifyOptions{}); err != nil {
				t.Fatalf("verify: %v", err)
			}
			if _, err := cms.VerifyDetached(sig, append(content, '!'), []*x509.Certificate{p.Cert}, cms.VerifyOptions{}); err == nil {
				t.Fatal("a changed message verified")
			}
			dec, ok := p.Key.(crypto.Decrypter)
			if alg == certs.ECDSAP256 || !ok {
				return
			}
			env, err := cms.Encrypt(content, []*x509.Certificate{p.Cert}, cms.EncryptOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := cms.Decrypt(env, []cms.Recipient{{Certificate: p.Cert, Key: dec}})
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("decrypt: %v", err)
			}
		})
	}
}
