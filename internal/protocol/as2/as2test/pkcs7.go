package as2test

import (
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"testing"

	"github.com/smallstep/pkcs7"
)

// oidAlgorithmProtection is id-aa-CMSAlgorithmProtection (RFC 6211).
var oidAlgorithmProtection = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 52}

// PKCS7Sign makes a detached SignedData with package pkcs7, the way a third party
// would: digest names the digest algorithm, chain follows the certificate, and a
// non-nil protection is put in an RFC 6211 attribute as it is, so a test can make one
// that matches the signature or one that does not.
func PKCS7Sign(t testing.TB, content []byte, cert *x509.Certificate, key crypto.Signer, chain []*x509.Certificate,
	digest asn1.ObjectIdentifier, protection []byte) []byte {
	t.Helper()
	sd, err := pkcs7.NewSignedData(content)
	if err != nil {
		t.Fatal(err)
	}
	sd.SetDigestAlgorithm(digest)
	var config pkcs7.SignerInfoConfig
	if protection != nil {
		config.ExtraSignedAttributes = []pkcs7.Attribute{{Type: oidAlgorithmProtection, Value: asn1.RawValue{FullBytes: protection}}}
	}
	if len(chain) > 0 {
		err = sd.AddSignerChain(cert, key, chain, config)
	} else {
		err = sd.AddSigner(cert, key, config)
	}
	if err != nil {
		t.Fatal(err)
	}
	sd.Detach()
	der, err := sd.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return der
}
