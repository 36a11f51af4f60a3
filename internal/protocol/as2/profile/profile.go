// Package profile holds the AS2 trading profiles: a local profile per organization (who
// we are to partners) and a remote profile per partner (how to reach it, what it must
// send us, how we send to it), with their validation, storage and REST routes.
package profile

import (
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// AS2ID is an AS2 identifier (RFC 4130 §6.2): 1 to 128 printable ASCII characters; a
// value with spaces or specials is quoted on the wire. Compared exactly.
type AS2ID string

// SigningAlgorithm is the digest of our signature on outbound messages, or none.
type SigningAlgorithm string

const (
	SignNone   SigningAlgorithm = "none"
	SignSHA256 SigningAlgorithm = "sha256"
	SignSHA384 SigningAlgorithm = "sha384"
	SignSHA512 SigningAlgorithm = "sha512"
)

// EncryptionAlgorithm is the content cipher of outbound messages, or none.
type EncryptionAlgorithm string

const (
	EncryptNone      EncryptionAlgorithm = "none"
	EncryptAES128CBC EncryptionAlgorithm = "aes128-cbc"
	EncryptAES192CBC EncryptionAlgorithm = "aes192-cbc"
	EncryptAES256CBC EncryptionAlgorithm = "aes256-cbc"
	EncryptAES128GCM EncryptionAlgorithm = "aes128-gcm"
	EncryptAES256GCM EncryptionAlgorithm = "aes256-gcm"
	Encrypt3DES      EncryptionAlgorithm = "3des"
)

// KeyTransport is how the content key is wrapped for the partner.
type KeyTransport string

const (
	KeyTransportRSA  KeyTransport = "rsa-pkcs1v15"
	KeyTransportOAEP KeyTransport = "rsa-oaep"
)

// MDNMode is the receipt we ask for on outbound messages.
type MDNMode string

const (
	MDNNone  MDNMode = "none"
	MDNSync  MDNMode = "sync"
	MDNAsync MDNMode = "async"
)

// MICAlgorithm is the digest we ask the partner to compute its MIC with.
type MICAlgorithm string

const (
	MICSHA256 MICAlgorithm = "sha256"
	MICSHA384 MICAlgorithm = "sha384"
	MICSHA512 MICAlgorithm = "sha512"
)

// MICPreference chooses which algorithm our MDN's MIC uses when the partner's requested
// algorithm and its signature's digest differ: OpenAS2 accepts only the requested one,
// pyas2-lib only the signature's.
type MICPreference string

const (
	// MICPreferAuto answers per the product recognised from the request, else with the
	// requested algorithm.
	MICPreferAuto      MICPreference = "auto"
	MICPreferRequested MICPreference = "requested"
	MICPreferSignature MICPreference = "signature"
)

// DuplicateFilename is what happens to an inbound file whose name the partner already
// sent within the window; duplicate_content takes the same values for a repeated
// document.
type DuplicateFilename string

const (
	DuplicateAccept DuplicateFilename = "accept"
	DuplicateWarn   DuplicateFilename = "warn"
	DuplicateRefuse DuplicateFilename = "refuse"
)

// Local is an organization's AS2 identity.
type Local struct {
	Organization persistence.PartyName `json:"organization"`
	AS2ID        AS2ID                 `json:"as2_id"`
	// SigningCertificateID signs our messages and MDNs (it has a private key).
	SigningCertificateID int64 `json:"signing_certificate_id"`
	// DecryptionCertificateID opens what partners encrypt to us (it has a private key).
	DecryptionCertificateID int64 `json:"decryption_certificate_id"`
	// PreviousDecryptionCertificateID, when set, is tried as well, so messages encrypted
	// to the key being replaced still open during a rollover.
	PreviousDecryptionCertificateID *int64 `json:"previous_decryption_certificate_id"`
	// MDNNotificationTo is the Disposition-Notification-To value we send.
	MDNNotificationTo string `json:"mdn_notification_to"`
	// MaxMessageSizeMiB bounds an inbound request body.
	MaxMessageSizeMiB int `json:"max_message_size_mib"`
	// MDNSigningCertificateID, when set, signs our MDNs instead of the signing
	// certificate (it has a private key).
	MDNSigningCertificateID *int64 `json:"mdn_signing_certificate_id"`
	// IncludeChain puts the intermediate certificates that chain our signing (and MDN
	// signing) certificate to a root, found in the certificate store, into each signature.
	IncludeChain bool      `json:"include_chain"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// Remote is a partner's AS2 profile.
type Remote struct {
	Partner     persistence.PartyName `json:"partner"`
	AS2ID       AS2ID                 `json:"as2_id"`
	EndpointURL string                `json:"endpoint_url"`
	// PartnerCertificateIDs verify the partner's signatures (every one is accepted); the
	// newest valid one encrypts what we send.
	PartnerCertificateIDs []int64 `json:"partner_certificate_ids"`
	// The our_… fields override the organization's local profile for this partner.
	OurSigningCertificateID    *int64 `json:"our_signing_certificate_id"`
	OurDecryptionCertificateID *int64 `json:"our_decryption_certificate_id"`

	// Outbound choices.
	Compress            bool                `json:"compress"`
	SigningAlgorithm    SigningAlgorithm    `json:"signing_algorithm"`
	EncryptionAlgorithm EncryptionAlgorithm `json:"encryption_algorithm"`
	KeyTransport        KeyTransport        `json:"key_transport"`
	MDNMode             MDNMode             `json:"mdn_mode"`
	SignedMDN           bool                `json:"signed_mdn"`
	MDNMICAlgorithm     MICAlgorithm        `json:"mdn_mic_algorithm"`
	// AsyncMDNURL is where the partner is asked to send async MDNs; empty means the
	// receiver's MDN path under the gateway's public URL.
	AsyncMDNURL string `json:"async_mdn_url"`

	// CompressionOrder places compression before or after signing when both are on.
	CompressionOrder CompressionOrder `json:"compression_order"`

	// Inbound requirements.
	RequireSigned    bool `json:"require_signed"`
	RequireEncrypted bool `json:"require_encrypted"`
	// AllowSHA1 accepts SHA-1 signatures and MICs from this partner.
	AllowSHA1     bool          `json:"allow_sha1"`
	MICPreference MICPreference `json:"mic_preference"`
	// AsyncMDNHosts are the hosts we send async MDNs to for this partner; the endpoint
	// URL's host is always vouched for.
	AsyncMDNHosts            []string          `json:"async_mdn_hosts"`
	DuplicateFilename        DuplicateFilename `json:"duplicate_filename"`
	DuplicateFilenameWindowH int               `json:"duplicate_filename_window_hours"`

	// Transport.
	ConnectTimeoutSeconds int `json:"connect_timeout_seconds"`
	RequestTimeoutSeconds int `json:"request_timeout_seconds"`
	// ReceiptTimeoutMinutes bounds the wait for an async MDN.
	ReceiptTimeoutMinutes int                  `json:"receipt_timeout_minutes"`
	Retry                 delivery.RetryPolicy `json:"retry"`
	// TLSTrustCertificateIDs are roots trusted for the endpoint's TLS: besides the
	// system's with TLSTrust system, alone with TLSTrust profile.
	TLSTrustCertificateIDs []int64 `json:"tls_trust_certificate_ids"`
	// TLS trust of the endpoint (see tls.go).
	TLSTrust        TLSTrust `json:"tls_trust"`
	TLSPinnedSHA256 string   `json:"tls_pinned_sha256"`
	// MaxMessageSizeMiB bounds what we accept from and send to the partner.
	MaxMessageSizeMiB int `json:"max_message_size_mib"`

	// AlgorithmProtection adds the CMS algorithm protection attribute (RFC 6211) to
	// our signatures on messages and MDNs for this partner; some IBM products
	// require it. Off by default, since products that do not know the attribute
	// have been seen to refuse it.
	AlgorithmProtection bool `json:"algorithm_protection"`

	// GCMConfirmed records that the partner confirmed it opens AES-GCM
	// (AuthEnvelopedData). An AES-GCM encryption_algorithm needs it: products that cannot
	// open it store the ciphertext as the document and still answer processed.
	GCMConfirmed bool `json:"gcm_confirmed"`
	// DuplicateContent is what happens to a document whose SHA-256 the partner sent
	// within DuplicateContentWindowH hours under another Message-ID (a resend after a
	// lost MDN): accept, warn (delivered and flagged) or refuse (not delivered again);
	// warn and refuse answer a positive MDN either way.
	DuplicateContent        DuplicateFilename `json:"duplicate_content"`
	DuplicateContentWindowH int               `json:"duplicate_content_window_hours"`

	// CorrelationHeader names a header of the partner's messages whose value becomes the
	// stored message's correlation id; empty (or a message without it) uses the AS2
	// Message-ID, which is always the origin event id.
	CorrelationHeader string `json:"correlation_header"`

	// Chunked says whether a message too large to be built in memory goes out with
	// Transfer-Encoding: chunked (auto) or is spooled to a file first and sent with a
	// Content-Length (never).
	Chunked Chunking `json:"chunked"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// NewRemote returns a remote profile with the secure defaults: compressed, signed with
// SHA-256, encrypted with AES-256-CBC, a signed sync MDN requested, and unsigned or
// unencrypted inbound messages refused.
func NewRemote() Remote {
	return Remote{
		Compress:                 true,
		CompressionOrder:         CompressBeforeSigning,
		Chunked:                  ChunkedAuto,
		SigningAlgorithm:         SignSHA256,
		EncryptionAlgorithm:      EncryptAES256CBC,
		KeyTransport:             KeyTransportRSA,
		MDNMode:                  MDNSync,
		SignedMDN:                true,
		MDNMICAlgorithm:          MICSHA256,
		RequireSigned:            true,
		RequireEncrypted:         true,
		MICPreference:            MICPreferAuto,
		DuplicateFilename:        DuplicateAccept,
		DuplicateFilenameWindowH: 24,
		DuplicateContent:         DuplicateAccept,
		DuplicateContentWindowH:  24,
		ConnectTimeoutSeconds:    10,
		RequestTimeoutSeconds:    120,
		ReceiptTimeoutMinutes:    60,
		MaxMessageSizeMiB:        512,
		PartnerCertificateIDs:    []int64{},
		AsyncMDNHosts:            []string{},
		TLSTrustCertificateIDs:   []int64{},
		TLSTrust:                 TLSTrustSystem,
	}
}

// NewLocal returns a local profile with its defaults.
func NewLocal() Local { return Local{MaxMessageSizeMiB: 512} }
