package profile

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"wharf/internal/persistence"
)

// TLSTrust is how a partner's HTTPS endpoint is trusted.
type TLSTrust string

const (
	// TLSTrustSystem trusts the system roots, and the certificates of
	// tls_trust_certificate_ids besides.
	TLSTrustSystem TLSTrust = "system"
	// TLSTrustProfile trusts only the roots of tls_trust_certificate_ids.
	TLSTrustProfile TLSTrust = "profile"
	// TLSTrustPinned trusts exactly the server certificate whose SHA-256 fingerprint is
	// tls_pinned_sha256, whoever issued it and whatever names it carries.
	TLSTrustPinned TLSTrust = "pinned"
)

var AllTLSTrusts = []TLSTrust{TLSTrustSystem, TLSTrustProfile, TLSTrustPinned}

func ParseTLSTrust(s string) (TLSTrust, error) {
	return persistence.ParseEnum("TLS trust", s, AllTLSTrusts)
}
func (v TLSTrust) MarshalText() ([]byte, error) { return persistence.DomainText(v, ParseTLSTrust) }
func (v *TLSTrust) UnmarshalText(b []byte) error {
	return persistence.UnmarshalDomain(v, b, ParseTLSTrust)
}
func (v *TLSTrust) Scan(src any) error          { return persistence.ScanDomain(v, src, ParseTLSTrust) }
func (v TLSTrust) Value() (driver.Value, error) { return persistence.DomainValue(v, ParseTLSTrust) }

// NormalizeFingerprint turns a SHA-256 fingerprint as tools print it (upper or lower
// case, with or without colons) into the lower-case hex the certificate store uses.
func NormalizeFingerprint(s string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), ":", ""))
}

// checkFingerprint admits 64 lower-case hex digits.
func checkFingerprint(s string) error {
	if b, err := hex.DecodeString(s); err != nil || len(b) != sha256.Size || s != strings.ToLower(s) {
		return fmt.Errorf("must be a SHA-256 fingerprint: 64 hex digits, colons allowed")
	}
	return nil
}

// checkTLSTrust checks the trust fields together: each mode reads its own fields, and a
// field the mode would not read is refused rather than kept unused.
func (r Remote) checkTLSTrust() error {
	if err := validEnum(r.TLSTrust, ParseTLSTrust); err != nil {
		return fieldErr("tls_trust", err.Error())
	}
	if r.TLSPinnedSHA256 != "" {
		if err := checkFingerprint(r.TLSPinnedSHA256); err != nil {
			return fieldErr("tls_pinned_sha256", err.Error())
		}
	}
	switch r.TLSTrust {
	case TLSTrustProfile:
		if len(r.TLSTrustCertificateIDs) == 0 {
			return fieldErr("tls_trust_certificate_ids", "tls_trust profile needs at least one root certificate")
		}
	case TLSTrustPinned:
		if r.TLSPinnedSHA256 == "" {
			return fieldErr("tls_pinned_sha256", "tls_trust pinned needs the SHA-256 fingerprint of the partner's server certificate")
		}
		if len(r.TLSTrustCertificateIDs) > 0 {
			return fieldErr("tls_trust_certificate_ids", "not used with tls_trust pinned; remove them")
		}
	}
	if r.TLSTrust != TLSTrustPinned && r.TLSPinnedSHA256 != "" {
		return fieldErr("tls_pinned_sha256", "used only with tls_trust pinned")
	}
	return nil
}

// ErrPinMismatch is the handshake's error when the server's certificate is not the pinned
// one.
var ErrPinMismatch = errors.New("the server's certificate does not match tls_pinned_sha256")

// TLSConfig is the client TLS configuration for the partner's endpoint, trusting what
// the remote profile names. The sender's client and the connection check both use it.
func (o Outbound) TLSConfig() *tls.Config {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.Roots}
	if o.Remote.TLSTrust != TLSTrustPinned {
		return conf
	}
	pin, _ := hex.DecodeString(o.Remote.TLSPinnedSHA256)
	// The pin replaces the chain and name checks: the one certificate named is trusted.
	conf.InsecureSkipVerify = true
	conf.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return ErrPinMismatch
		}
		got := sha256.Sum256(cs.PeerCertificates[0].Raw)
		if len(pin) != sha256.Size || !bytes.Equal(got[:], pin) {
			return fmt.Errorf("%w (the server sent %x)", ErrPinMismatch, got)
		}
		return nil
	}
	return conf
}

// TrustHint says, for a refused server certificate, which setting decided the trust.
func (r Remote) TrustHint() string {
	switch r.TLSTrust {
	case TLSTrustProfile:
		return "tls_trust is profile: only the roots of tls_trust_certificate_ids are trusted"
	case TLSTrustPinned:
		return "tls_trust is pinned: only the certificate of tls_pinned_sha256 is trusted"
	}
	if len(r.TLSTrustCertificateIDs) > 0 {
		return "tls_trust is system: the system roots and tls_trust_certificate_ids are trusted"
	}
	return "tls_trust is system: only the system roots are trusted; add the partner's root to tls_trust_certificate_ids or pin its certificate"
}
