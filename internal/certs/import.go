package certs

import (
	"context"
	"errors"
	"fmt"

	"wharf/internal/persistence"
)

// MaxUploadSize bounds an uploaded certificate file; real certificate files and PKCS#12
// bundles are a few kilobytes. The REST API and the web UI both apply it.
const MaxUploadSize = 1 << 20

// Creator stores imported certificates.
type Creator interface {
	CreateCertificates(ctx context.Context, certs []persistence.Certificate) ([]persistence.Certificate, error)
}

// Import stores every certificate of an uploaded file (PEM, DER or PKCS#12 opened with
// password) and its private key sealed. A file that does not parse is a
// *persistence.FieldError naming "file", or "password" when the PKCS#12 password is wrong;
// a certificate already stored is the store's persistence.ErrConflict. The password is
// used to open the file only and appears in no error.
func Import(ctx context.Context, st Creator, sealer Sealer, file []byte, password, description string) ([]persistence.Certificate, error) {
	parsed, err := Parse(file, password)
	if err != nil {
		field := "file"
		if errors.Is(err, ErrWrongPassword) {
			field = "password"
		}
		return nil, &persistence.FieldError{Field: field, Message: err.Error()}
	}
	recs, err := Records(parsed, description, sealer)
	if err != nil {
		return nil, err
	}
	stored, err := st.CreateCertificates(ctx, recs)
	if err != nil {
		return nil, fmt.Errorf("store certificates: %w", err)
	}
	return stored, nil
}
