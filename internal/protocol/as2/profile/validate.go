package profile

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// Bounds of the numeric settings. They keep a typing slip (seconds for minutes, MiB for
// bytes) from turning into a setting nobody meant.
const (
	MaxMessageSizeMiB         = 10 << 10 // 10 GiB
	MaxConnectTimeoutSeconds  = 300
	MaxRequestTimeoutSeconds  = 3600
	MaxReceiptTimeoutMinutes  = 7 * 24 * 60
	MaxDuplicateWindowHours   = 366 * 24
	MaxRetryDelay             = 7 * 24 * time.Hour
	maxURLLength              = 2048
	maxMDNNotificationTo      = 256
	maxCertificatesPerProfile = 16
	maxAsyncMDNHosts          = 32
)

// Validate checks a local profile on its own; the store checks what it references. The
// error is a *persistence.FieldError naming the JSON field.
func (l Local) Validate() error {
	var errs persistence.FieldErrors
	if _, err := persistence.ParsePartyName(string(l.Organization)); err != nil {
		errs.Add("organization", err.Error())
	}
	if _, err := ParseAS2ID(string(l.AS2ID)); err != nil {
		errs.Add("as2_id", err.Error())
	}
	if l.SigningCertificateID < 0 {
		errs.Add("signing_certificate_id", "must be a certificate id, or 0 for none")
	}
	if l.DecryptionCertificateID < 0 {
		errs.Add("decryption_certificate_id", "must be a certificate id, or 0 for none")
	}
	if p := l.PreviousDecryptionCertificateID; p != nil {
		switch {
		case *p < 1:
			errs.Add("previous_decryption_certificate_id", "must be a certificate id, or null")
		case l.DecryptionCertificateID == 0:
			errs.Add("previous_decryption_certificate_id", "needs a decryption certificate to follow")
		case *p == l.DecryptionCertificateID:
			errs.Add("previous_decryption_certificate_id", "must differ from the decryption certificate")
		}
	}
	if err := checkHeaderText(l.MDNNotificationTo, maxMDNNotificationTo); err != nil {
		errs.Add("mdn_notification_to", err.Error())
	}
	if err := checkRange(l.MaxMessageSizeMiB, 1, MaxMessageSizeMiB); err != nil {
		errs.Add("max_message_size_mib", err.Error())
	}
	if err := checkOptionalID(l.MDNSigningCertificateID); err != nil {
		errs.Add("mdn_signing_certificate_id", err.Error()+" for the signing certificate")
	}
	return errs.Err()
}

// Validate checks a remote profile on its own; the store checks what it references. The
// error is a *persistence.FieldError naming the JSON field.
func (r Remote) Validate() error {
	var errs persistence.FieldErrors
	if _, err := persistence.ParsePartyName(string(r.Partner)); err != nil {
		errs.Add("partner", err.Error())
	}
	if _, err := ParseAS2ID(string(r.AS2ID)); err != nil {
		errs.Add("as2_id", err.Error())
	}
	if err := checkURL(r.EndpointURL); err != nil {
		errs.Add("endpoint_url", err.Error())
	}
	if err := checkIDs(r.PartnerCertificateIDs); err != nil {
		errs.Add("partner_certificate_ids", err.Error())
	}
	if err := checkOptionalID(r.OurSigningCertificateID); err != nil {
		errs.Add("our_signing_certificate_id", err.Error())
	}
	if err := checkOptionalID(r.OurDecryptionCertificateID); err != nil {
		errs.Add("our_decryption_certificate_id", err.Error())
	}
	for _, e := range []struct {
		field string
		err   error
	}{
		{"signing_algorithm", validEnum(r.SigningAlgorithm, ParseSigningAlgorithm)},
		{"encryption_algorithm", validEnum(r.EncryptionAlgorithm, ParseEncryptionAlgorithm)},
		{"key_transport", validEnum(r.KeyTransport, ParseKeyTransport)},
		{"mdn_mode", validEnum(r.MDNMode, ParseMDNMode)},
		{"mdn_mic_algorithm", validEnum(r.MDNMICAlgorithm, ParseMICAlgorithm)},
		{"mic_preference", validEnum(r.MICPreference, ParseMICPreference)},
		{"duplicate_filename", validEnum(r.DuplicateFilename, ParseDuplicateFilename)},
		{"compression_order", validEnum(r.CompressionOrder, ParseCompressionOrder)},
		{"duplicate_content", validEnum(r.DuplicateContent, ParseDuplicateFilename)},
		{"chunked", validEnum(r.Chunked, ParseChunking)},
	} {
		if e.err != nil {
			errs.Add(e.field, e.err.Error())
		}
	}
	if r.EncryptionAlgorithm == Encrypt3DES {
		errs.Add("encryption_algorithm", "3des is accepted inbound only; choose an AES cipher")
	}
	if r.EncryptionAlgorithm.GCM() && !r.GCMConfirmed {
		errs.Add("gcm_confirmed", "AES-GCM needs the partner's confirmation that it opens AES-GCM (OpenAS2 4.9.0 and pyas2-lib 1.4.4 do not): confirm it, or choose an AES-CBC cipher")
	}
	if r.AsyncMDNURL != "" {
		if err := checkURL(r.AsyncMDNURL); err != nil {
			errs.Add("async_mdn_url", err.Error())
		}
	}
	if err := checkHosts(r.AsyncMDNHosts); err != nil {
		errs.Add("async_mdn_hosts", err.Error())
	}
	if err := checkHeaderName(r.CorrelationHeader); err != nil {
		errs.Add("correlation_header", err.Error())
	}
	for _, n := range []struct {
		field     string
		v, lo, hi int
	}{
		{"duplicate_filename_window_hours", r.DuplicateFilenameWindowH, 1, MaxDuplicateWindowHours},
		{"duplicate_content_window_hours", r.DuplicateContentWindowH, 1, MaxDuplicateWindowHours},
		{"connect_timeout_seconds", r.ConnectTimeoutSeconds, 1, MaxConnectTimeoutSeconds},
		{"request_timeout_seconds", r.RequestTimeoutSeconds, 1, MaxRequestTimeoutSeconds},
		{"receipt_timeout_minutes", r.ReceiptTimeoutMinutes, 1, MaxReceiptTimeoutMinutes},
		{"max_message_size_mib", r.MaxMessageSizeMiB, 1, MaxMessageSizeMiB},
	} {
		if err := checkRange(n.v, n.lo, n.hi); err != nil {
			errs.Add(n.field, err.Error())
		}
	}
	if r.ConnectTimeoutSeconds > r.RequestTimeoutSeconds {
		errs.Add("connect_timeout_seconds", "must not be longer than the request timeout")
	}
	if err := checkRetry(r); !errs.Merge(err) {
		return err
	}
	if err := checkIDs(r.TLSTrustCertificateIDs); err != nil {
		errs.Add("tls_trust_certificate_ids", err.Error())
	}
	if err := r.checkTLSTrust(); !errs.Merge(err) {
		return err
	}
	// Each of these needs something to check the partner's signatures or to encrypt to.
	if len(r.PartnerCertificateIDs) == 0 {
		switch {
		case r.EncryptionAlgorithm != EncryptNone:
			errs.Add("partner_certificate_ids", "encryption needs a partner certificate to encrypt to: add one, or choose no encryption")
		case r.RequireSigned:
			errs.Add("partner_certificate_ids", "requiring signed messages needs a partner certificate to verify signatures with")
		case r.SignedMDN && r.MDNMode != MDNNone:
			errs.Add("partner_certificate_ids", "a signed MDN needs a partner certificate to verify it with")
		}
	}
	return errs.Err()
}

func checkRetry(r Remote) error {
	var errs persistence.FieldErrors
	if err := r.Retry.Validate(); err != nil {
		field, msg, ok := strings.Cut(err.Error(), ": ")
		if !ok {
			field, msg = "", err.Error()
		}
		errs.Add(strings.TrimSuffix("retry."+field, "."), msg)
	}
	if time.Duration(r.Retry.MaxDelay) > MaxRetryDelay {
		errs.Add("retry.max_delay", "must be at most "+MaxRetryDelay.String())
	}
	if time.Duration(r.Retry.Base) > MaxRetryDelay {
		errs.Add("retry.base", "must be at most "+MaxRetryDelay.String())
	}
	for _, c := range retry.AllClasses {
		rule := r.Retry.Rules.For(c)
		if rule == nil {
			continue
		}
		for _, d := range []struct {
			field string
			v     retry.Duration
		}{{"max_delay", rule.MaxDelay}, {"base", rule.Base}} {
			if time.Duration(d.v) > MaxRetryDelay {
				errs.Add("retry.rules."+string(c)+"."+d.field, "must be at most "+MaxRetryDelay.String())
			}
		}
	}
	return errs.Err()
}

func fieldErr(field, msg string) error {
	return &persistence.FieldError{Field: field, Message: msg}
}

func validEnum[T ~string](v T, parse func(string) (T, error)) error {
	_, err := parse(string(v))
	return err
}

func checkRange(v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("must be between %d and %d", lo, hi)
	}
	return nil
}

func checkOptionalID(id *int64) error {
	if id != nil && *id < 1 {
		return fmt.Errorf("must be a certificate id, or null")
	}
	return nil
}

func checkIDs(ids []int64) error {
	if len(ids) > maxCertificatesPerProfile {
		return fmt.Errorf("at most %d certificates", maxCertificatesPerProfile)
	}
	for i, id := range ids {
		if id < 1 {
			return fmt.Errorf("%d is not a certificate id", id)
		}
		if slices.Contains(ids[:i], id) {
			return fmt.Errorf("certificate %d is listed twice", id)
		}
	}
	return nil
}

// checkURL admits an absolute http or https URL without credentials (they would end up
// in logs) and without a fragment (it never reaches the server).
func checkURL(s string) error {
	if s == "" {
		return fmt.Errorf("required")
	}
	if len(s) > maxURLLength {
		return fmt.Errorf("longer than %d bytes", maxURLLength)
	}
	if strings.ContainsFunc(s, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		return fmt.Errorf("must not contain spaces or control characters")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("must be an absolute http or https URL")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("must name a host")
	case u.User != nil:
		return fmt.Errorf("must not carry credentials")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("must not have a fragment")
	}
	if p := u.Port(); p != "" {
		if err := checkPort(p); err != nil {
			return err
		}
	}
	return nil
}

func checkPort(p string) error {
	n := 0
	for _, c := range p {
		n = n*10 + int(c-'0')
		if n > 65535 {
			break
		}
	}
	if n < 1 || n > 65535 {
		return fmt.Errorf("port %s is out of range", p)
	}
	return nil
}

// checkHosts admits lower-case DNS names and IP addresses: the host part of a URL as
// url.URL.Hostname returns it, which is what async MDN targets are compared against.
func checkHosts(hosts []string) error {
	if len(hosts) > maxAsyncMDNHosts {
		return fmt.Errorf("at most %d hosts", maxAsyncMDNHosts)
	}
	for i, h := range hosts {
		if err := checkHost(h); err != nil {
			return err
		}
		if slices.Contains(hosts[:i], h) {
			return fmt.Errorf("host %q is listed twice", h)
		}
	}
	return nil
}

func checkHost(h string) error {
	if h == "" {
		return fmt.Errorf("empty host")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		switch {
		case a.Zone() != "":
			return fmt.Errorf("host %q: an address with a zone is not a host", h)
		case a.String() != h:
			return fmt.Errorf("host %q: write the address as %s", h, a)
		}
		return nil
	}
	if strings.Contains(h, "://") || strings.ContainsAny(h, ":/[]@") {
		return fmt.Errorf("host %q: a host name only, without scheme, port or path", h)
	}
	if h != strings.ToLower(h) {
		return fmt.Errorf("host %q: must be lower case", h)
	}
	name := strings.TrimSuffix(h, ".")
	if len(name) > 253 {
		return fmt.Errorf("host %q: longer than 253 characters", h)
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("host %q is not a valid host name", h)
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("host %q is not a valid host name", h)
			}
		}
	}
	return nil
}

// checkHeaderText admits what can be sent as a header value as is: printable US-ASCII.
func checkHeaderText(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("longer than %d characters", max)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("only printable US-ASCII characters are allowed")
		}
	}
	if strings.TrimSpace(s) != s {
		return fmt.Errorf("leading or trailing space")
	}
	return nil
}
