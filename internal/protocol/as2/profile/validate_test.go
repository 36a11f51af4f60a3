package profile

import (
	"strings"
	"testing"
	"time"

	"wharf/internal/delivery"
)

func validLocal() Local {
	l := NewLocal()
	l.Organization = "local"
	l.AS2ID = "WHARF"
	l.SigningCertificateID = 1
	l.DecryptionCertificateID = 2
	return l
}

func validRemote() Remote {
	r := NewRemote()
	r.Partner = "acme"
	r.AS2ID = "ACME"
	r.EndpointURL = "https://as2.acme.example:4443/as2?box=1"
	r.PartnerCertificateIDs = []int64{3}
	return r
}

func TestLocalValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(l *Local)
		field string // "" for valid
	}{
		{"valid", func(l *Local) {}, ""},
		{"no certificates", func(l *Local) { l.SigningCertificateID, l.DecryptionCertificateID = 0, 0 }, ""},
		{"rollover", func(l *Local) { l.PreviousDecryptionCertificateID = ptr(int64(5)) }, ""},
		{"mdn address", func(l *Local) { l.MDNNotificationTo = "edi@example.com" }, ""},
		{"bad organization", func(l *Local) { l.Organization = "Local" }, "organization"},
		{"no organization", func(l *Local) { l.Organization = "" }, "organization"},
		{"no AS2 id", func(l *Local) { l.AS2ID = "" }, "as2_id"},
		{"quoted AS2 id", func(l *Local) { l.AS2ID = `"X"` }, "as2_id"},
		{"negative signing", func(l *Local) { l.SigningCertificateID = -1 }, "signing_certificate_id"},
		{"negative decryption", func(l *Local) { l.DecryptionCertificateID = -1 }, "decryption_certificate_id"},
		{"previous zero", func(l *Local) { l.PreviousDecryptionCertificateID = ptr(int64(0)) }, "previous_decryption_certificate_id"},
		{"previous same", func(l *Local) { l.PreviousDecryptionCertificateID = ptr(int64(2)) }, "previous_decryption_certificate_id"},
		{"previous alone", func(l *Local) {
			l.DecryptionCertificateID = 0
			l.PreviousDecryptionCertificateID = ptr(int64(2))
		}, "previous_decryption_certificate_id"},
		{"mdn address with newline", func(l *Local) { l.MDNNotificationTo = "a@b\r\nX-Evil: 1" }, "mdn_notification_to"},
		{"mdn address too long", func(l *Local) { l.MDNNotificationTo = strings.Repeat("a", 257) }, "mdn_notification_to"},
		{"size zero", func(l *Local) { l.MaxMessageSizeMiB = 0 }, "max_message_size_mib"},
		{"size huge", func(l *Local) { l.MaxMessageSizeMiB = MaxMessageSizeMiB + 1 }, "max_message_size_mib"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := validLocal()
			tt.edit(&l)
			err := l.Validate()
			if got := fieldOf(err); got != tt.field || (tt.field != "" && err == nil) {
				t.Fatalf("Validate() = %v; want field %q", err, tt.field)
			}
		})
	}
}

func TestRemoteValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(r *Remote)
		field string // "" for valid
	}{
		{"valid", func(r *Remote) {}, ""},
		{"http endpoint", func(r *Remote) { r.EndpointURL = "http://10.0.0.1/as2" }, ""},
		{"ipv6 endpoint", func(r *Remote) { r.EndpointURL = "https://[2001:db8::1]:8443/as2" }, ""},
		{"plain partner", func(r *Remote) {
			r.PartnerCertificateIDs = nil
			r.EncryptionAlgorithm, r.SigningAlgorithm, r.MDNMode = EncryptNone, SignNone, MDNNone
			r.RequireSigned, r.RequireEncrypted = false, false
		}, ""},
		{"unsigned MDN without certificate", func(r *Remote) {
			r.PartnerCertificateIDs = nil
			r.EncryptionAlgorithm, r.RequireSigned, r.SignedMDN = EncryptNone, false, false
		}, ""},
		{"signed MDN flag without MDN", func(r *Remote) {
			r.PartnerCertificateIDs = nil
			r.EncryptionAlgorithm, r.RequireSigned, r.MDNMode = EncryptNone, false, MDNNone
		}, ""},
		{"async", func(r *Remote) {
			r.MDNMode = MDNAsync
			r.AsyncMDNURL = "https://wharf.example.com/as2/mdn"
			r.AsyncMDNHosts = []string{"mdn.acme.example", "192.0.2.7", "2001:db8::7"}
		}, ""},
		{"retry", func(r *Remote) {
			r.Retry = delivery.RetryPolicy{Strategy: delivery.RetryLinear, Base: delivery.Duration(time.Minute), MaxRetries: ptr(3)}
		}, ""},
		{"overrides", func(r *Remote) {
			r.OurSigningCertificateID, r.OurDecryptionCertificateID = ptr(int64(7)), ptr(int64(8))
			r.TLSTrustCertificateIDs = []int64{9}
		}, ""},

		{"bad partner", func(r *Remote) { r.Partner = "ACME" }, "partner"},
		{"no AS2 id", func(r *Remote) { r.AS2ID = "" }, "as2_id"},
		{"AS2 id with backslash", func(r *Remote) { r.AS2ID = `A\B` }, "as2_id"},
		{"no endpoint", func(r *Remote) { r.EndpointURL = "" }, "endpoint_url"},
		{"relative endpoint", func(r *Remote) { r.EndpointURL = "/as2" }, "endpoint_url"},
		{"ftp endpoint", func(r *Remote) { r.EndpointURL = "ftp://acme.example/as2" }, "endpoint_url"},
		{"opaque endpoint", func(r *Remote) { r.EndpointURL = "https:acme.example" }, "endpoint_url"},
		{"endpoint credentials", func(r *Remote) { r.EndpointURL = "https://user:pw@acme.example/as2" }, "endpoint_url"},
		{"endpoint fragment", func(r *Remote) { r.EndpointURL = "https://acme.example/as2#x" }, "endpoint_url"},
		{"endpoint empty fragment", func(r *Remote) { r.EndpointURL = "https://acme.example/as2#" }, "endpoint_url"},
		{"endpoint space", func(r *Remote) { r.EndpointURL = "https://acme.example/a s2" }, "endpoint_url"},
		{"endpoint port", func(r *Remote) { r.EndpointURL = "https://acme.example:70000/as2" }, "endpoint_url"},
		{"endpoint long", func(r *Remote) { r.EndpointURL = "https://acme.example/" + strings.Repeat("a", 2048) }, "endpoint_url"},
		{"bad async URL", func(r *Remote) { r.AsyncMDNURL = "mailto:edi@acme.example" }, "async_mdn_url"},
		{"async URL credentials", func(r *Remote) { r.AsyncMDNURL = "https://u@acme.example/mdn" }, "async_mdn_url"},
		{"zero certificate id", func(r *Remote) { r.PartnerCertificateIDs = []int64{0} }, "partner_certificate_ids"},
		{"duplicate certificate", func(r *Remote) { r.PartnerCertificateIDs = []int64{3, 4, 3} }, "partner_certificate_ids"},
		{"bad our signing", func(r *Remote) { r.OurSigningCertificateID = ptr(int64(0)) }, "our_signing_certificate_id"},
		{"bad our decryption", func(r *Remote) { r.OurDecryptionCertificateID = ptr(int64(-2)) }, "our_decryption_certificate_id"},
		{"empty signing algorithm", func(r *Remote) { r.SigningAlgorithm = "" }, "signing_algorithm"},
		{"sha1 signing", func(r *Remote) { r.SigningAlgorithm = "sha1" }, "signing_algorithm"},
		{"bad encryption", func(r *Remote) { r.EncryptionAlgorithm = "rc2" }, "encryption_algorithm"},
		{"3des outbound", func(r *Remote) { r.EncryptionAlgorithm = Encrypt3DES }, "encryption_algorithm"},
		{"gcm unconfirmed", func(r *Remote) { r.EncryptionAlgorithm = EncryptAES256GCM }, "gcm_confirmed"},
		{"gcm 128 unconfirmed", func(r *Remote) { r.EncryptionAlgorithm = EncryptAES128GCM }, "gcm_confirmed"},
		{"gcm confirmed", func(r *Remote) { r.EncryptionAlgorithm, r.GCMConfirmed = EncryptAES256GCM, true }, ""},
		{"cbc needs no confirmation", func(r *Remote) { r.EncryptionAlgorithm, r.GCMConfirmed = EncryptAES128CBC, false }, ""},
		{"bad duplicate content policy", func(r *Remote) { r.DuplicateContent = "drop" }, "duplicate_content"},
		{"empty chunked", func(r *Remote) { r.Chunked = "" }, "chunked"},
		{"chunked never", func(r *Remote) { r.Chunked = ChunkedNever }, ""},
		{"empty duplicate content policy", func(r *Remote) { r.DuplicateContent = "" }, "duplicate_content"},
		{"content window zero", func(r *Remote) { r.DuplicateContentWindowH = 0 }, "duplicate_content_window_hours"},
		{"content window huge", func(r *Remote) { r.DuplicateContentWindowH = MaxDuplicateWindowHours + 1 }, "duplicate_content_window_hours"},
		{"bad key transport", func(r *Remote) { r.KeyTransport = "" }, "key_transport"},
		{"bad mdn mode", func(r *Remote) { r.MDNMode = "later" }, "mdn_mode"},
		{"bad mic", func(r *Remote) { r.MDNMICAlgorithm = "sha1" }, "mdn_mic_algorithm"},
		{"bad mic preference", func(r *Remote) { r.MICPreference = "" }, "mic_preference"},
		{"bad duplicate policy", func(r *Remote) { r.DuplicateFilename = "drop" }, "duplicate_filename"},
		{"correlation header", func(r *Remote) { r.CorrelationHeader = "X-Correlation-ID" }, ""},
		{"correlation header with a space", func(r *Remote) { r.CorrelationHeader = "X Correlation" }, "correlation_header"},
		{"correlation header with a colon", func(r *Remote) { r.CorrelationHeader = "X-Corr:" }, "correlation_header"},
		{"correlation header too long", func(r *Remote) { r.CorrelationHeader = strings.Repeat("x", 65) }, "correlation_header"},
		{"host upper case", func(r *Remote) { r.AsyncMDNHosts = []string{"MDN.acme.example"} }, "async_mdn_hosts"},
		{"host with scheme", func(r *Remote) { r.AsyncMDNHosts = []string{"https://mdn.acme.example"} }, "async_mdn_hosts"},
		{"host with port", func(r *Remote) { r.AsyncMDNHosts = []string{"mdn.acme.example:443"} }, "async_mdn_hosts"},
		{"host with path", func(r *Remote) { r.AsyncMDNHosts = []string{"mdn.acme.example/x"} }, "async_mdn_hosts"},
		{"host empty", func(r *Remote) { r.AsyncMDNHosts = []string{""} }, "async_mdn_hosts"},
		{"host bad label", func(r *Remote) { r.AsyncMDNHosts = []string{"-mdn.acme.example"} }, "async_mdn_hosts"},
		{"host underscore", func(r *Remote) { r.AsyncMDNHosts = []string{"mdn_1.acme.example"} }, "async_mdn_hosts"},
		{"host bracketed address", func(r *Remote) { r.AsyncMDNHosts = []string{"[2001:db8::7]"} }, "async_mdn_hosts"},
		{"host address not canonical", func(r *Remote) { r.AsyncMDNHosts = []string{"2001:DB8::7"} }, "async_mdn_hosts"},
		{"host twice", func(r *Remote) { r.AsyncMDNHosts = []string{"a.example", "a.example"} }, "async_mdn_hosts"},
		{"window zero", func(r *Remote) { r.DuplicateFilenameWindowH = 0 }, "duplicate_filename_window_hours"},
		{"connect zero", func(r *Remote) { r.ConnectTimeoutSeconds = 0 }, "connect_timeout_seconds"},
		{"connect huge", func(r *Remote) { r.ConnectTimeoutSeconds = MaxConnectTimeoutSeconds + 1 }, "connect_timeout_seconds"},
		{"connect over request", func(r *Remote) { r.ConnectTimeoutSeconds, r.RequestTimeoutSeconds = 60, 30 }, "connect_timeout_seconds"},
		{"request negative", func(r *Remote) { r.RequestTimeoutSeconds = -1 }, "request_timeout_seconds"},
		{"receipt huge", func(r *Remote) { r.ReceiptTimeoutMinutes = MaxReceiptTimeoutMinutes + 1 }, "receipt_timeout_minutes"},
		{"size zero", func(r *Remote) { r.MaxMessageSizeMiB = 0 }, "max_message_size_mib"},
		{"retry strategy", func(r *Remote) { r.Retry.Strategy = "random" }, "retry.strategy"},
		{"retry jitter", func(r *Remote) { r.Retry.Jitter = ptr(2.0) }, "retry.jitter"},
		{"retry count", func(r *Remote) { r.Retry.MaxRetries = ptr(-1) }, "retry.max_retries"},
		{"retry base over max", func(r *Remote) {
			r.Retry.Base, r.Retry.MaxDelay = delivery.Duration(time.Hour), delivery.Duration(time.Minute)
		}, "retry.base"},
		{"retry max delay", func(r *Remote) { r.Retry.MaxDelay = delivery.Duration(30 * 24 * time.Hour) }, "retry.max_delay"},
		{"rule max delay", func(r *Remote) {
			r.Retry.Rules.HTTP5xx = &delivery.RetryRule{MaxDelay: delivery.Duration(30 * 24 * time.Hour)}
		}, "retry.rules.http_5xx.max_delay"},
		{"rule never with a schedule", func(r *Remote) {
			r.Retry.Rules.Timeout = &delivery.RetryRule{Never: true, MaxRetries: ptr(2)}
		}, "retry.rules.timeout.never"},
		{"trust duplicate", func(r *Remote) { r.TLSTrustCertificateIDs = []int64{9, 9} }, "tls_trust_certificate_ids"},
		{"encrypts without certificate", func(r *Remote) {
			r.PartnerCertificateIDs = nil
			r.RequireSigned, r.SignedMDN = false, false
		}, "partner_certificate_ids"},
		{"requires signed without certificate", func(r *Remote) {
			r.PartnerCertificateIDs = []int64{}
			r.EncryptionAlgorithm, r.SignedMDN = EncryptNone, false
		}, "partner_certificate_ids"},
		{"signed MDN without certificate", func(r *Remote) {
			r.PartnerCertificateIDs = nil
			r.EncryptionAlgorithm, r.RequireSigned = EncryptNone, false
		}, "partner_certificate_ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validRemote()
			tt.edit(&r)
			err := r.Validate()
			if got := fieldOf(err); got != tt.field || (tt.field != "" && err == nil) {
				t.Fatalf("Validate() = %v; want field %q", err, tt.field)
			}
		})
	}
}

// TestNewRemoteIsSecure holds the defaults DESIGN §6 promises.
func TestNewRemoteIsSecure(t *testing.T) {
	r := NewRemote()
	if !r.Compress || r.SigningAlgorithm != SignSHA256 || r.EncryptionAlgorithm != EncryptAES256CBC ||
		r.MDNMode != MDNSync || !r.SignedMDN || !r.RequireSigned || !r.RequireEncrypted || r.AllowSHA1 {
		t.Fatalf("NewRemote() = %+v", r)
	}
}
