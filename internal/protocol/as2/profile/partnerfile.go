package profile

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
)

// A partner profile file is what an organization hands a partner so the partner can set
// it up without typing: its AS2 id, the URLs it is reached at, its certificates and its
// algorithm preferences, as JSON in the format named by PartnerFileFormat. It never
// carries a private key or a secret. Another Wharf imports it on its "new partner" page
// or over REST, and the file's fields become the partner, its remote profile and its
// certificates.

// PartnerFileFormat names the file format and its version; a file naming another is
// refused.
const PartnerFileFormat = "wharf-partner-profile/1"

// MaxPartnerFileSize bounds a profile file: two certificates and a few lines of JSON.
const MaxPartnerFileSize = 256 << 10

// PartnerFile is a partner profile file.
type PartnerFile struct {
	Format string `json:"format"`
	// Name and DisplayName are the organization's, a suggestion for the partner's name on
	// the importing side.
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	AS2ID       AS2ID  `json:"as2_id"`
	// EndpointURL is where partners post messages; AsyncMDNURL where they post async MDNs.
	EndpointURL  string                  `json:"endpoint_url"`
	AsyncMDNURL  string                  `json:"async_mdn_url"`
	Certificates PartnerFileCertificates `json:"certificates"`
	Preferences  PartnerFilePreferences  `json:"preferences"`
	Accepts      PartnerFileAccepts      `json:"accepts"`
	MDN          PartnerFileMDN          `json:"mdn"`
	// MaxMessageSizeMiB is the largest message the organization takes.
	MaxMessageSizeMiB int `json:"max_message_size_mib"`
}

// PartnerFileCertificates are the organization's certificates as PEM: the one its
// signatures verify with, and the one messages to it are encrypted to (often the same).
type PartnerFileCertificates struct {
	Signing    string `json:"signing"`
	Encryption string `json:"encryption"`
}

// PartnerFilePreferences are how the organization would like to be sent to.
type PartnerFilePreferences struct {
	SigningAlgorithm    SigningAlgorithm    `json:"signing_algorithm"`
	EncryptionAlgorithm EncryptionAlgorithm `json:"encryption_algorithm"`
	KeyTransport        KeyTransport        `json:"key_transport"`
	Compress            bool                `json:"compress"`
}

// PartnerFileAccepts are the algorithms the organization opens; the preferences are
// among them.
type PartnerFileAccepts struct {
	SigningAlgorithms    []SigningAlgorithm    `json:"signing_algorithms"`
	EncryptionAlgorithms []EncryptionAlgorithm `json:"encryption_algorithms"`
	KeyTransports        []KeyTransport        `json:"key_transports"`
}

// PartnerFileMDN are the receipts the organization answers with.
type PartnerFileMDN struct {
	// Modes are the receipt modes it answers (sync, async).
	Modes []MDNMode `json:"modes"`
	// Signed says it signs its receipts when asked.
	Signed       bool         `json:"signed"`
	MICAlgorithm MICAlgorithm `json:"mic_algorithm"`
}

// ParsedPartnerFile is a profile file that passed every check, with its certificates.
type ParsedPartnerFile struct {
	File       PartnerFile
	Signing    *x509.Certificate
	Encryption *x509.Certificate
}

// Certificates are the file's distinct certificates, the encryption one first.
func (p ParsedPartnerFile) Certificates() []*x509.Certificate {
	if bytes.Equal(p.Signing.Raw, p.Encryption.Raw) {
		return []*x509.Certificate{p.Encryption}
	}
	return []*x509.Certificate{p.Encryption, p.Signing}
}

// rawPartnerFile is the file as JSON holds it, every value checked afterwards so that an
// error names its key.
type rawPartnerFile struct {
	Format       *string `json:"format"`
	Name         string  `json:"name"`
	DisplayName  string  `json:"display_name"`
	AS2ID        string  `json:"as2_id"`
	EndpointURL  string  `json:"endpoint_url"`
	AsyncMDNURL  string  `json:"async_mdn_url"`
	Certificates struct {
		Signing    string `json:"signing"`
		Encryption string `json:"encryption"`
	} `json:"certificates"`
	Preferences struct {
		SigningAlgorithm    string `json:"signing_algorithm"`
		EncryptionAlgorithm string `json:"encryption_algorithm"`
		KeyTransport        string `json:"key_transport"`
		Compress            bool   `json:"compress"`
	} `json:"preferences"`
	Accepts struct {
		SigningAlgorithms    []string `json:"signing_algorithms"`
		EncryptionAlgorithms []string `json:"encryption_algorithms"`
		KeyTransports        []string `json:"key_transports"`
	} `json:"accepts"`
	MDN struct {
		Modes        []string `json:"modes"`
		Signed       bool     `json:"signed"`
		MICAlgorithm string   `json:"mic_algorithm"`
	} `json:"mdn"`
	MaxMessageSizeMiB int `json:"max_message_size_mib"`
}

// ErrPartnerFile is wrapped by every refusal of ParsePartnerFile.
var ErrPartnerFile = errors.New("not a usable partner profile file")

// PartnerFileError is a refusal of a profile file naming the key that is wrong ("" for
// the file as a whole).
type PartnerFileError struct {
	Key     string
	Message string
}

func (e *PartnerFileError) Error() string {
	if e.Key == "" {
		return e.Message
	}
	return e.Key + ": " + e.Message
}

func (e *PartnerFileError) Unwrap() error { return ErrPartnerFile }

func fileErr(key, format string, args ...any) error {
	return &PartnerFileError{Key: key, Message: fmt.Sprintf(format, args...)}
}

// ParsePartnerFile reads a profile file strictly: one JSON object of the known keys,
// this format, every value valid, certificates as one PEM certificate each and nothing
// else (a private key is refused), preferences among the algorithms it accepts.
func ParsePartnerFile(data []byte) (ParsedPartnerFile, error) {
	if len(data) > MaxPartnerFileSize {
		return ParsedPartnerFile{}, fileErr("", "the file is larger than %d KiB; a profile file is a few kilobytes", MaxPartnerFileSize>>10)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return ParsedPartnerFile{}, fileErr("", "the file is empty")
	}
	var raw rawPartnerFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return ParsedPartnerFile{}, jsonFileErr(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return ParsedPartnerFile{}, fileErr("", "unexpected data after the JSON object")
	}
	if raw.Format == nil {
		return ParsedPartnerFile{}, fileErr("format", "missing: this is not a Wharf partner profile file (it must say %q)", PartnerFileFormat)
	}
	if *raw.Format != PartnerFileFormat {
		return ParsedPartnerFile{}, fileErr("format", "%q is not a format this Wharf reads; it reads %q", *raw.Format, PartnerFileFormat)
	}
	return raw.check()
}

func jsonFileErr(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fileErr(te.Field, "must be a JSON %s", jsonKind(te.Type.Kind().String()))
	case errors.As(err, &se):
		return fileErr("", "not valid JSON (at byte %d): %v", se.Offset, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fileErr("", "the JSON ends too early")
	}
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fileErr(strings.Trim(rest, `"`), "unknown key; this Wharf reads %s files only", PartnerFileFormat)
	}
	return fileErr("", "not a JSON object: %v", err)
}

func (raw rawPartnerFile) check() (ParsedPartnerFile, error) {
	f := PartnerFile{Format: PartnerFileFormat, Name: raw.Name, DisplayName: raw.DisplayName,
		EndpointURL: raw.EndpointURL, AsyncMDNURL: raw.AsyncMDNURL, MaxMessageSizeMiB: raw.MaxMessageSizeMiB}
	var errs []error
	add := func(key string, err error) {
		if err != nil {
			errs = append(errs, fileErr(key, "%s", err.Error()))
		}
	}
	var err error
	if raw.AS2ID == "" {
		add("as2_id", errors.New("required"))
	} else {
		f.AS2ID, err = ParseAS2ID(raw.AS2ID)
		add("as2_id", err)
	}
	if len(raw.Name) > 256 || len(raw.DisplayName) > 256 {
		add("name", errors.New("longer than 256 characters"))
	}
	if raw.EndpointURL == "" {
		add("endpoint_url", errors.New("required"))
	} else {
		add("endpoint_url", checkURL(raw.EndpointURL))
	}
	if raw.AsyncMDNURL != "" {
		add("async_mdn_url", checkURL(raw.AsyncMDNURL))
	}
	if raw.MaxMessageSizeMiB != 0 {
		add("max_message_size_mib", checkRange(raw.MaxMessageSizeMiB, 1, 4096))
	}
	p := raw.Preferences
	f.Preferences.Compress = p.Compress
	f.Preferences.SigningAlgorithm, err = parseRequired(p.SigningAlgorithm, ParseSigningAlgorithm)
	add("preferences.signing_algorithm", err)
	f.Preferences.EncryptionAlgorithm, err = parseRequired(p.EncryptionAlgorithm, ParseEncryptionAlgorithm)
	add("preferences.encryption_algorithm", err)
	f.Preferences.KeyTransport, err = parseRequired(p.KeyTransport, ParseKeyTransport)
	add("preferences.key_transport", err)
	f.Accepts.SigningAlgorithms, err = parseList(raw.Accepts.SigningAlgorithms, ParseSigningAlgorithm)
	add("accepts.signing_algorithms", err)
	f.Accepts.EncryptionAlgorithms, err = parseList(raw.Accepts.EncryptionAlgorithms, ParseEncryptionAlgorithm)
	add("accepts.encryption_algorithms", err)
	f.Accepts.KeyTransports, err = parseList(raw.Accepts.KeyTransports, ParseKeyTransport)
	add("accepts.key_transports", err)
	f.MDN.Signed = raw.MDN.Signed
	f.MDN.Modes, err = parseList(raw.MDN.Modes, ParseMDNMode)
	add("mdn.modes", err)
	if err == nil && slices.Contains(f.MDN.Modes, MDNNone) {
		add("mdn.modes", errors.New("lists the receipt modes answered: sync, async"))
	}
	f.MDN.MICAlgorithm, err = parseRequired(raw.MDN.MICAlgorithm, ParseMICAlgorithm)
	add("mdn.mic_algorithm", err)
	if len(errs) == 0 {
		errs = append(errs, f.preferencesAccepted()...)
	}
	out := ParsedPartnerFile{File: f}
	out.Signing, err = parseFileCertificate(raw.Certificates.Signing)
	add("certificates.signing", err)
	out.Encryption, err = parseFileCertificate(raw.Certificates.Encryption)
	add("certificates.encryption", err)
	if len(errs) > 0 {
		return ParsedPartnerFile{}, errors.Join(errs...)
	}
	// The file carries the certificates in one canonical PEM form.
	out.File.Certificates = PartnerFileCertificates{Signing: CertificatePEM(out.Signing.Raw), Encryption: CertificatePEM(out.Encryption.Raw)}
	return out, nil
}

// preferencesAccepted refuses a preference that is not among the algorithms the file
// says the organization accepts.
func (f PartnerFile) preferencesAccepted() []error {
	var errs []error
	if !slices.Contains(f.Accepts.SigningAlgorithms, f.Preferences.SigningAlgorithm) {
		errs = append(errs, fileErr("preferences.signing_algorithm", "%q is not in accepts.signing_algorithms", f.Preferences.SigningAlgorithm))
	}
	if !slices.Contains(f.Accepts.EncryptionAlgorithms, f.Preferences.EncryptionAlgorithm) {
		errs = append(errs, fileErr("preferences.encryption_algorithm", "%q is not in accepts.encryption_algorithms", f.Preferences.EncryptionAlgorithm))
	}
	if !slices.Contains(f.Accepts.KeyTransports, f.Preferences.KeyTransport) {
		errs = append(errs, fileErr("preferences.key_transport", "%q is not in accepts.key_transports", f.Preferences.KeyTransport))
	}
	return errs
}

func parseRequired[T ~string](s string, parse func(string) (T, error)) (T, error) {
	if s == "" {
		return "", errors.New("required")
	}
	return parse(s)
}

func parseList[T ~string](in []string, parse func(string) (T, error)) ([]T, error) {
	if len(in) == 0 {
		return nil, errors.New("required: at least one")
	}
	out := make([]T, 0, len(in))
	for _, s := range in {
		v, err := parse(s)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("%q is listed twice", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseFileCertificate reads one PEM certificate and nothing else.
func parseFileCertificate(s string) (*x509.Certificate, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("required: a PEM certificate")
	}
	trimmed := strings.TrimSpace(s)
	if !strings.HasPrefix(trimmed, "-----BEGIN ") {
		return nil, errors.New("not a PEM certificate (it must begin with -----BEGIN CERTIFICATE-----)")
	}
	block, rest := pem.Decode([]byte(trimmed))
	if block == nil {
		return nil, errors.New("not a PEM certificate")
	}
	if strings.Contains(block.Type, "PRIVATE KEY") || bytes.Contains(rest, []byte("PRIVATE KEY")) {
		return nil, errors.New("holds a private key; a profile file carries certificates only, and the key should be replaced now that it has left its owner")
	}
	if block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("a PEM %q block, not a CERTIFICATE", block.Type)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("more than one PEM block; one certificate is expected")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the certificate does not parse: %w", err)
	}
	return c, nil
}

// CertificatePEM is a DER certificate as PEM.
func CertificatePEM(der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// CertificateFingerprint is the SHA-256 of a DER certificate in lower-case hex, as the
// certificate store names certificates.
func CertificateFingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// Marshal is the file as written for download: indented JSON ending in a newline.
func (f PartnerFile) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the partner profile file: %w", err)
	}
	return append(b, '\n'), nil
}

// ApplyTo sets a remote profile's fields from the file: the partner's AS2 id, endpoint
// and preferences for what we send, the receipt it answers with, and the host of its
// async MDN URL as one our async MDNs may go to. Certificates are the caller's to store
// and name.
func (p ParsedPartnerFile) ApplyTo(r *Remote) {
	f := p.File
	r.AS2ID = f.AS2ID
	r.EndpointURL = f.EndpointURL
	r.SigningAlgorithm = f.Preferences.SigningAlgorithm
	r.EncryptionAlgorithm = f.Preferences.EncryptionAlgorithm
	// The partner's own file saying it opens the GCM cipher it prefers is its
	// confirmation.
	r.GCMConfirmed = f.Preferences.EncryptionAlgorithm.GCM()
	r.KeyTransport = f.Preferences.KeyTransport
	r.Compress = f.Preferences.Compress
	r.SignedMDN = f.MDN.Signed
	r.MDNMICAlgorithm = f.MDN.MICAlgorithm
	r.MDNMode = MDNAsync
	if slices.Contains(f.MDN.Modes, MDNSync) {
		r.MDNMode = MDNSync
	}
	if f.MaxMessageSizeMiB != 0 {
		r.MaxMessageSizeMiB = f.MaxMessageSizeMiB
	}
	if f.AsyncMDNURL != "" {
		mdn, _ := url.Parse(f.AsyncMDNURL)
		ep, _ := url.Parse(f.EndpointURL)
		if mdn != nil && ep != nil && !strings.EqualFold(mdn.Hostname(), ep.Hostname()) &&
			!slices.Contains(r.AsyncMDNHosts, mdn.Hostname()) {
			r.AsyncMDNHosts = append(slices.Clone(r.AsyncMDNHosts), mdn.Hostname())
		}
	}
}
