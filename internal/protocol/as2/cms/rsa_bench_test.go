package cms

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"
)

// BenchmarkRSA2048 measures the RSA operations an AS2 exchange is made of, with the
// standard library a message goes through: a private-key signature (signing a message or
// an MDN; decrypting a content key costs the same) and a public-key verification. Set
// beside `openssl speed rsa2048`, it is the floor of the load test's CPU per message.
func BenchmarkRSA2048(b *testing.B) {
	id := testIdentity(b, "bench")
	key := id.key.(*rsa.PrivateKey)
	digest := sha256.Sum256([]byte("an AS2 message"))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			if _, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if err := rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, digest[:], sig); err != nil {
				b.Fatal(err)
			}
		}
	})
}
