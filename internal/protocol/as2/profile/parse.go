package profile

import (
	"database/sql/driver"
	"fmt"

	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/cms"
)

// Each domain string has one canonical list and one parser, used alike by JSON, SQL scans
// and writes, and forms, so no entry point admits a value the profile refuses.

var (
	AllSigningAlgorithms    = []SigningAlgorithm{SignNone, SignSHA256, SignSHA384, SignSHA512}
	AllEncryptionAlgorithms = []EncryptionAlgorithm{EncryptNone, EncryptAES128CBC, EncryptAES192CBC, EncryptAES256CBC, EncryptAES128GCM, EncryptAES256GCM, Encrypt3DES}
	AllKeyTransports        = []KeyTransport{KeyTransportRSA, KeyTransportOAEP}
	AllMDNModes             = []MDNMode{MDNNone, MDNSync, MDNAsync}
	AllMICAlgorithms        = []MICAlgorithm{MICSHA256, MICSHA384, MICSHA512}
	AllMICPreferences       = []MICPreference{MICPreferAuto, MICPreferRequested, MICPreferSignature}
	AllDuplicateFilenames   = []DuplicateFilename{DuplicateAccept, DuplicateWarn, DuplicateRefuse}
)

// MaxAS2IDLength is the longest AS2 id RFC 4130 §6.2 admits.
const MaxAS2IDLength = 128

// ParseAS2ID accepts 1 to 128 printable US-ASCII characters without the quote and the
// backslash (which would need escaping in a quoted header value) and without leading or
// trailing spaces (which a header parser trims).
func ParseAS2ID(s string) (AS2ID, error) {
	switch {
	case s == "":
		return "", fmt.Errorf("invalid AS2 id: empty")
	case len(s) > MaxAS2IDLength:
		return "", fmt.Errorf("invalid AS2 id: longer than %d characters", MaxAS2IDLength)
	case s[0] == ' ' || s[len(s)-1] == ' ':
		return "", fmt.Errorf("invalid AS2 id %q: leading or trailing space", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("invalid AS2 id %q: only printable US-ASCII characters are allowed", s)
		}
		if c == '"' || c == '\\' {
			return "", fmt.Errorf("invalid AS2 id %q: %q is not allowed", s, c)
		}
	}
	return AS2ID(s), nil
}

func (v AS2ID) MarshalText() ([]byte, error)  { return persistence.DomainText(v, ParseAS2ID) }
func (v *AS2ID) UnmarshalText(b []byte) error { return persistence.UnmarshalDomain(v, b, ParseAS2ID) }
func (v *AS2ID) Scan(src any) error           { return persistence.ScanDomain(v, src, ParseAS2ID) }
func (v AS2ID) Value() (driver.Value, error)  { return persistence.DomainValue(v, ParseAS2ID) }

// ParseSigningAlgorithm refuses SHA-1: it is accepted inbound where a profile allows it,
// never used for what we sign.
func ParseSigningAlgorithm(s string) (SigningAlgorithm, error) {
	if s == "sha1" {
		return "", fmt.Errorf("invalid signing algorithm %q: SHA-1 is not used for outbound signatures (allow_sha1 accepts it inbound)", s)
	}
	return persistence.ParseEnum("signing algorithm", s, AllSigningAlgorithms)
}
func (v SigningAlgorithm) MarshalText() ([]byte, error) {
	return persistence.DomainText(v, ParseSigningAlgorithm)
}
func (v *SigningAlgorithm) UnmarshalText(b []byte) error {
	return persistence.UnmarshalDomain(v, b, ParseSigningAlgorithm)
}
func (v *SigningAlgorithm) Scan(src any) error {
	return persistence.ScanDomain(v, src, ParseSigningAlgorithm)
}
func (v SigningAlgorithm) Value() (driver.Value, error) {
	return persistence.DomainValue(v, ParseSigningAlgorithm)
}

// Digest is the CMS digest of the signature, or "" for none.
func (v SigningAlgorithm) Digest() cms.DigestAlgorithm {
	switch v {
	case SignSHA256:
		return cms.SHA256
	case SignSHA384:
		return cms.SHA384
	case SignSHA512:
		return cms.SHA512
	}
	return ""
}

func ParseEncryptionAlgorithm(s string) (EncryptionAlgorithm, error) {
	return persistence.ParseEnum("encryption algorithm", s, AllEncryptionAlgorithms)
}
func (v EncryptionAlgorithm) MarshalText() ([]byte, error) {
	return persistence.DomainText(v, ParseEncryptionAlgorithm)
}
func (v *EncryptionAlgorithm) UnmarshalText(b []byte) error {
	return persistence.UnmarshalDomain(v, b, ParseEncryptionAlgorithm)
}
func (v *EncryptionAlgorithm) Scan(src any) error {
	return persistence.ScanDomain(v, src, ParseEncryptionAlgorithm)
}
func (v EncryptionAlgorithm) Value() (driver.Value, error) {
	return persistence.DomainValue(v, ParseEncryptionAlgorithm)
}

// GCM reports an AES-GCM algorithm (AuthEnvelopedData), which many AS2 products
// cannot open.
func (v EncryptionAlgorithm) GCM() bool { return v == EncryptAES128GCM || v == EncryptAES256GCM }

// Cipher is the CMS content cipher, or "" for none.
func (v EncryptionAlgorithm) Cipher() cms.ContentCipher {
	switch v {
	case EncryptAES128CBC:
		return cms.AES128CBC
	case EncryptAES192CBC:
		return cms.AES192CBC
	case EncryptAES256CBC:
		return cms.AES256CBC
	case EncryptAES128GCM:
		return cms.AES128GCM
	case EncryptAES256GCM:
		return cms.AES256GCM
	case Encrypt3DES:
		return cms.DES3CBC
	}
	return ""
}

func ParseKeyTransport(s string) (KeyTransport, error) {
	return persistence.ParseEnum("key transport", s, AllKeyTransports)
}
func (v KeyTransport) MarshalText() ([]byte, error) {
	return persistence.DomainText(v, ParseKeyTransport)
}
func (v *KeyTransport) UnmarshalText(b []byte) error {
	return persistence.UnmarshalDomain(v, b, ParseKeyTransport)
}
func (v *KeyTransport) Scan(src any) error { return persistence.ScanDomain(v, src, ParseKeyTransport) }
func (v KeyTransport) Value() (driver.Value, error) {
	return persistence.DomainValue(v, ParseKeyTransport)
}

// CMS is the CMS key transport. OAEP uses SHA-256 for its hash and mask generation, as
// RFC 8551 recommends.
func (v KeyTransport) CMS() cms.KeyTransport {
	switch v {
	case KeyTransportRSA:
		return cms.RSAPKCS1v15
	case KeyTransportOAEP:
		return cms.RSAOAEPSHA256
	}
	return ""
}

func ParseMDNMode(s string) (MDNMode, error) {
	return persistence.ParseEnum("MDN mode", s, AllMDNModes)
}
func (v MDNMode) MarshalText() ([]byte, error) { return persistence.DomainText(v, ParseMDNMode) }
func (v *MDNMode) UnmarshalText(b []byte) error {
	return persistence.UnmarshalDomain(v, b, ParseMDNMode)
}
func (v *MDNMode) Scan(src any) error          { return persistence.ScanDomain(v, src, ParseMDNMode) }
func (v MDNMode) Value() (driver.Value, error) { return persistence.DomainValue(v, ParseMDNMode) }

// ParseMICAlgorithm refuses SHA-1 for the same reason as ParseSigningAlgorithm: it is
// what we ask the partner for.
func ParseMICAlgorithm(s string) (MICAlgorithm, error) {
	if s == "sha1" {
		return "", fmt.Errorf("invalid MIC algorithm %q: SHA-1 is not requested (allow_sha1 accepts it inbound)", s)
	}
	return persistence.ParseEnum("MIC algorithm", s, AllMICAlgorithms)
}
func (v MICAlgorithm) MarshalText() ([]byte, error) {
	return persistence.DomainText(v, ParseMICAlgorithm)
}
func (v *MICAlgorithm) UnmarshalText(b []byte) error {
	return persistence.UnmarshalDomain(v, b, ParseMICAlgorithm)
}
func (v *MICAlgorithm) Scan(src any) error { return persistence.ScanDomain(v, src, ParseMICAlgorithm) }
func (v MICAlgorithm) Value() (driver.Value, error) {
	return persistence.DomainValue(v, ParseMICAlgorithm)
}

// Digest is the CMS digest of the MIC.
func (v MICAlgorithm) Digest() cms.DigestAlgorithm {
	switch v {
	case MICSHA256:
		return cms.SHA256
	case MICSHA384:
		return cms.SHA384
	case MICSHA512:
		return cms.SHA512
	}
	return ""
}

func ParseMICPreference(s string) (MICPreference, error) {
	return persistence.ParseEnum("MIC preference", s, AllMICPreferences)
}
func (v MICPreference) MarshalText() ([]byte, error) {
	return persistence.DomainText(v, ParseMICPreference)
}
func (v *MICPreference) UnmarshalText(b []byte) error {
	return persistence.UnmarshalDomain(v, b, ParseMICPreference)
}
func (v *MICPreference) Scan(src any) error {
	return persistence.ScanDomain(v, src, ParseMICPreference)
}
func (v MICPreference) Value() (driver.Value, error) {
	return persistence.DomainValue(v, ParseMICPreference)
}

func ParseDuplicateFilename(s string) (DuplicateFilename, error) {
	return persistence.ParseEnum("duplicate filename policy", s, AllDuplicateFilenames)
}
func (v DuplicateFilename) MarshalText() ([]byte, error) {
	return persistence.DomainText(v, ParseDuplicateFilename)
}
func (v *DuplicateFilename) UnmarshalText(b []byte) error {
	return persistence.UnmarshalDomain(v, b, ParseDuplicateFilename)
}
func (v *DuplicateFilename) Scan(src any) error {
	return persistence.ScanDomain(v, src, ParseDuplicateFilename)
}
func (v DuplicateFilename) Value() (driver.Value, error) {
	return persistence.DomainValue(v, ParseDuplicateFilename)
}
