package mime

import (
	"bytes"
	"crypto/x509"
	"net/http"
	"sync"
	"testing"

	"wharf/internal/protocol/as2/cms"
)

// Messages with different digests and ciphers built and opened at the same
// time do not disturb each other (no process-wide algorithm settings).
func TestConcurrentBuildAndUnpack(t *testing.T) {
	ours, partner := testIdentity(t, "ours"), testIdentity(t, "partner")
	digests := []cms.DigestAlgorithm{cms.SHA256, cms.SHA384, cms.SHA512}
	ciphers := []cms.ContentCipher{cms.AES128CBC, cms.AES256CBC, cms.AES256GCM}
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for i := range 24 {
		wg.Go(func() {
			payload := bytes.Repeat([]byte{byte(i)}, 1000+i)
			built, err := Build(payload, "p.bin", BuildOptions{
				Sign: partner.signer(digests[i%3]),
				Encrypt: &Encryption{Recipients: []*x509.Certificate{ours.cert},
					EncryptOptions: cms.EncryptOptions{Cipher: ciphers[(i/3)%3]}},
			})
			if err != nil {
				errs <- err
				return
			}
			res, err := Unpack(built.ContentType, http.Header{}, built.Body, UnpackOptions{
				Decryption:          []cms.Recipient{ours.recipient()},
				PartnerCertificates: []*x509.Certificate{partner.cert},
			})
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(res.Payload, payload) || res.Signer.Digest != digests[i%3] || res.Decryption.Cipher != ciphers[(i/3)%3] {
				errs <- errMismatch
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

var errMismatch = errorString("payload, digest or cipher differs")

type errorString string

func (e errorString) Error() string { return string(e) }
