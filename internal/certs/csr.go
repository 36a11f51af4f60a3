package certs

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strconv"

	"wharf/internal/persistence"
)

// CertificateRequest is a PKCS#10 request (PEM) for a CA, signed with the private key of
// the stored certificate id and naming its subject. The certificate the CA issues for it
// is uploaded later and joins that key (see Upload).
func (o *Opener) CertificateRequest(ctx context.Context, id int64) ([]byte, error) {
	cert, key, err := o.Signer(ctx, id)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: cert.Subject}, key)
	if err != nil {
		return nil, fmt.Errorf("certificate %d: create the certificate request: %w", id, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// PEM encodes a stored certificate's DER as a CERTIFICATE block.
func PEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Download is a stored certificate as a file: its media type, a file name built from its
// id, and its bytes, PEM or DER (the .cer that Windows and many AS2 products take).
func Download(c persistence.Certificate, der bool) (contentType, name string, body []byte) {
	base := "certificate-" + strconv.FormatInt(c.ID, 10)
	if der {
		return "application/pkix-cert", base + ".cer", c.DER
	}
	return "application/x-pem-file", base + ".pem", PEM(c.DER)
}
