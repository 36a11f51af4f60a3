package cms

import (
	"errors"
	"fmt"
	"time"
)

// Failure classes. Each error returned by this package wraps exactly one of
// them; the AS2 layer maps them to MDN dispositions.
var (
	// ErrDecryption: the content could not be decrypted (no matching
	// recipient, a key that does not open it, bad padding, a damaged
	// EnvelopedData).
	ErrDecryption = errors.New("decryption failed")
	// ErrUnsupportedAlgorithm: a cipher, key transport, digest or signature
	// algorithm outside what this package implements.
	ErrUnsupportedAlgorithm = errors.New("unsupported algorithm")
	// ErrAuthentication: a signature does not verify or its signer is not a
	// trusted partner certificate.
	ErrAuthentication = errors.New("authentication failed")
	// ErrIntegrity: the signed content does not match the digest the signer
	// signed (the content changed on the way). A GCM tag that does not match
	// is ErrDecryption, since a wrong key cannot be told from altered data.
	ErrIntegrity = errors.New("integrity check failed")
	// ErrDecompression: CompressedData could not be inflated or is larger
	// than allowed.
	ErrDecompression = errors.New("decompression failed")
	// ErrInsufficientSecurity: a valid structure using an algorithm the
	// caller does not accept (SHA-1 signatures unless allowed).
	ErrInsufficientSecurity = errors.New("insufficient message security")
	// ErrMalformed: the input is not the CMS structure expected. It is
	// always wrapped together with the class of the operation (for example
	// ErrDecryption for a damaged EnvelopedData).
	ErrMalformed = errors.New("malformed CMS")
)

// DecompressionLimitError reports content that inflates past the caller's
// limit. It matches ErrDecompression with errors.Is.
type DecompressionLimitError struct {
	Limit int64
}

func (e *DecompressionLimitError) Error() string {
	return fmt.Sprintf("decompressed content exceeds the limit of %d bytes", e.Limit)
}

// Is makes a limit error count as a decompression failure.
func (e *DecompressionLimitError) Is(target error) bool { return target == ErrDecompression }

// CertificateValidityError reports a signer certificate used outside its
// validity period. It matches ErrAuthentication with errors.Is.
type CertificateValidityError struct {
	Subject             string
	NotBefore, NotAfter time.Time
	At                  time.Time
}

func (e *CertificateValidityError) Error() string {
	return fmt.Sprintf("signer certificate %q is not valid at %s (valid %s to %s)",
		e.Subject, e.At.UTC().Format(time.RFC3339),
		e.NotBefore.UTC().Format(time.RFC3339), e.NotAfter.UTC().Format(time.RFC3339))
}

// Is makes a validity error count as an authentication failure.
func (e *CertificateValidityError) Is(target error) bool { return target == ErrAuthentication }

func malformed(class error, format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", class, ErrMalformed, fmt.Sprintf(format, args...))
}

// AEADSizeError reports AES-GCM content larger than the caller holds in memory to
// check its tag. It matches ErrDecryption with errors.Is.
type AEADSizeError struct {
	Limit int64
}

func (e *AEADSizeError) Error() string {
	return fmt.Sprintf("AES-GCM content of more than %d bytes: it is held whole until its tag verifies, so it is accepted up to that size", e.Limit)
}

// Is makes a size error count as a decryption failure.
func (e *AEADSizeError) Is(target error) bool { return target == ErrDecryption }
