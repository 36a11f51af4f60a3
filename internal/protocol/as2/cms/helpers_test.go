package cms

import (
	"crypto"
	"crypto/x509"
	"testing"

	"wharf/internal/protocol/as2/as2test"
)

// identity is a throwaway certificate and key made for the tests.
type identity struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func (id identity) recipient() Recipient {
	return Recipient{Certificate: id.cert, Key: id.key.(crypto.Decrypter)}
}

// testIdentity returns a throwaway identity per name, made once per test binary (see
// as2test.NewIdentity).
func testIdentity(t testing.TB, name string) identity {
	t.Helper()
	id := as2test.NewIdentity(t, name)
	return identity{cert: id.Cert, key: id.Key}
}

// writePEM stores the identity for openssl and returns the file names.
func writePEM(t testing.TB, dir string, id identity) (certFile, keyFile string) {
	t.Helper()
	return as2test.WritePEM(t, dir, id.cert, id.key)
}

// openssl runs the openssl command line; the tests need it installed.
func openssl(t testing.TB, args ...string) []byte {
	t.Helper()
	return as2test.OpenSSL(t, args...)
}
