package certs

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"wharf/internal/persistence"
)

// KeyAlgorithm is the kind and size of a generated key pair.
type KeyAlgorithm string

const (
	RSA2048   KeyAlgorithm = "rsa-2048"
	RSA3072   KeyAlgorithm = "rsa-3072"
	RSA4096   KeyAlgorithm = "rsa-4096"
	ECDSAP256 KeyAlgorithm = "ecdsa-p256"
)

// AllKeyAlgorithms lists the algorithms Generate makes, the default first.
var AllKeyAlgorithms = []KeyAlgorithm{RSA2048, RSA3072, RSA4096, ECDSAP256}

// Label is the algorithm as a form shows it.
func (a KeyAlgorithm) Label() string {
	switch a {
	case ECDSAP256:
		return "ECDSA P-256 (signing only: AS2 partners encrypt to RSA keys)"
	case RSA2048:
		return "RSA 2048 bits (signing and encryption)"
	}
	return "RSA " + strings.TrimPrefix(string(a), "rsa-") + " bits (signing and encryption)"
}

// Bounds of a generated certificate's fields.
const (
	MaxValidityDays     = 3650
	DefaultValidityDays = 730
	maxSubjectField     = 64 // RFC 5280's upper bound for most name attributes
)

// Subject is the distinguished name of a generated certificate.
type Subject struct {
	CommonName         string `json:"common_name"`
	Organization       string `json:"organization"`
	OrganizationalUnit string `json:"organizational_unit"`
	Locality           string `json:"locality"`
	Province           string `json:"province"`
	Country            string `json:"country"`
}

// GenerateRequest asks for a key pair with a self-signed certificate.
type GenerateRequest struct {
	Algorithm    KeyAlgorithm `json:"algorithm"`
	Subject      Subject      `json:"subject"`
	ValidityDays int          `json:"validity_days"`
	Description  string       `json:"description"`
}

// Check refuses a request the way a form shows it: every wrong field at once, each a
// *persistence.FieldError named by its JSON key (subject fields by their own name).
func (r GenerateRequest) Check() error {
	var errs []error
	bad := func(field, msg string) {
		errs = append(errs, &persistence.FieldError{Field: field, Message: msg})
	}
	if !slices.Contains(AllKeyAlgorithms, r.Algorithm) {
		bad("algorithm", "Choose one of the key types offered.")
	}
	if strings.TrimSpace(r.Subject.CommonName) == "" {
		bad("common_name", "Enter a name for the certificate, such as your AS2 id or company name.")
	}
	for _, f := range []struct{ name, v string }{
		{"common_name", r.Subject.CommonName}, {"organization", r.Subject.Organization},
		{"organizational_unit", r.Subject.OrganizationalUnit}, {"locality", r.Subject.Locality},
		{"province", r.Subject.Province},
	} {
		switch {
		case !utf8.ValidString(f.v) || strings.ContainsAny(f.v, "\x00\r\n"):
			bad(f.name, "Use letters, digits and punctuation on one line.")
		case utf8.RuneCountInString(f.v) > maxSubjectField:
			bad(f.name, fmt.Sprintf("At most %d characters.", maxSubjectField))
		}
	}
	if c := r.Subject.Country; c != "" && (len(c) != 2 || strings.ToUpper(c) != c || strings.Trim(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "") {
		bad("country", "Use the two capital letters of the country code, such as DE or US.")
	}
	if r.ValidityDays < 1 || r.ValidityDays > MaxValidityDays {
		bad("validity_days", fmt.Sprintf("Enter a number of days from 1 to %d.", MaxValidityDays))
	}
	if len(r.Description) > 200 {
		bad("description", "At most 200 characters.")
	}
	return errors.Join(errs...)
}

func (s Subject) name() pkix.Name {
	n := pkix.Name{CommonName: strings.TrimSpace(s.CommonName)}
	add := func(dst *[]string, v string) {
		if v = strings.TrimSpace(v); v != "" {
			*dst = append(*dst, v)
		}
	}
	add(&n.Organization, s.Organization)
	add(&n.OrganizationalUnit, s.OrganizationalUnit)
	add(&n.Locality, s.Locality)
	add(&n.Province, s.Province)
	add(&n.Country, s.Country)
	return n
}

// NewKey makes a private key of the algorithm.
func NewKey(a KeyAlgorithm) (crypto.Signer, error) {
	switch a {
	case RSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	case RSA3072:
		return rsa.GenerateKey(rand.Reader, 3072)
	case RSA4096:
		return rsa.GenerateKey(rand.Reader, 4096)
	case ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	return nil, fmt.Errorf("generate key: %w", &persistence.FieldError{Field: "algorithm", Message: fmt.Sprintf("no key algorithm %q", a)})
}

// Generate makes a key pair and a self-signed certificate for it, valid from now for the
// request's days. The key usage fits AS2: an RSA key signs and receives encrypted
// messages (key transport), an ECDSA key signs only; a self-signed end-entity
// certificate carries no extended key usage, since AS2 products refuse ones that do not
// list what they expect.
func Generate(req GenerateRequest, now time.Time) (Parsed, error) {
	if err := req.Check(); err != nil {
		return Parsed{}, err
	}
	key, err := NewKey(req.Algorithm)
	if err != nil {
		return Parsed{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return Parsed{}, fmt.Errorf("generate serial number: %w", err)
	}
	usage := x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment
	if _, isRSA := key.(*rsa.PrivateKey); isRSA {
		usage |= x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment
	}
	name := req.Subject.name()
	tmpl := &x509.Certificate{
		SerialNumber:          serial.Add(serial, big.NewInt(1)),
		Subject:               name,
		Issuer:                name,
		NotBefore:             now.Add(-5 * time.Minute).UTC().Truncate(time.Second),
		NotAfter:              now.AddDate(0, 0, req.ValidityDays).UTC().Truncate(time.Second),
		KeyUsage:              usage,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return Parsed{}, fmt.Errorf("create certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Parsed{}, fmt.Errorf("parse the generated certificate: %w", err)
	}
	return Parsed{Cert: cert, Key: key}, nil
}

// GenerateStored generates a key pair and certificate per req and stores them, the key
// sealed with sealer.
func GenerateStored(ctx context.Context, st Creator, sealer Sealer, req GenerateRequest, now time.Time) (persistence.Certificate, error) {
	p, err := Generate(req, now)
	if err != nil {
		return persistence.Certificate{}, err
	}
	recs, err := Records([]Parsed{p}, req.Description, sealer)
	if err != nil {
		return persistence.Certificate{}, err
	}
	stored, err := st.CreateCertificates(ctx, recs)
	if err != nil {
		return persistence.Certificate{}, fmt.Errorf("store the generated certificate: %w", err)
	}
	return stored[0], nil
}
