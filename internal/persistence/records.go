package persistence

import (
	"encoding/json"
	"fmt"
	"time"

	"wharf/internal/retry"
)

// Party is an organization or a partner.
type Party struct {
	ID          int64     `json:"id"`
	Kind        PartyKind `json:"-"`
	Name        PartyName `json:"name"`
	DisplayName string    `json:"display_name"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// PluginConfig is one configured plugin instance. Config holds the type's own settings as
// JSON without the write-only fields; Secrets holds those, sealed, and is never returned by
// the API or logged.
type PluginConfig struct {
	Name      InstanceName    `json:"name"`
	Type      PluginType      `json:"type"`
	Enabled   bool            `json:"enabled"`
	Config    json.RawMessage `json:"config"`
	Secrets   []byte          `json:"-"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Route sends messages from a source instance, matching from and to, to a target instance.
type Route struct {
	ID      int64        `json:"id"`
	Source  InstanceName `json:"source"`
	From    PartyPattern `json:"from"`
	To      PartyPattern `json:"to"`
	Target  InstanceName `json:"target"`
	Ordered bool         `json:"ordered"`
	// SessionBy, on an ordered route, names the metadata entry whose value keys a
	// delivery's session; empty means the default session of the parties (SessionFor).
	SessionBy string    `json:"session_by"`
	CreatedAt time.Time `json:"created_at"`
	// Retry overrides the target's retry policy for deliveries this route dispatches;
	// nil keeps the target's.
	Retry *retry.Policy `json:"retry"`
}

// Describe names the route for people: "source from→to target".
func (r Route) Describe() string {
	return fmt.Sprintf("%s %s→%s %s", r.Source, r.From, r.To, r.Target)
}

// Matches reports whether the route takes a message from source with the given parties.
func (r Route) Matches(source InstanceName, from, to PartyName) bool {
	return r.Source == source && r.From.Matches(from) && r.To.Matches(to)
}

// Overlaps reports whether one of the two routes covers the other: same source and target,
// and one's from and to both admit everything the other's do. Such a pair is redundant.
func (r Route) Overlaps(o Route) bool {
	if r.Source != o.Source || r.Target != o.Target {
		return false
	}
	rInO := r.From.CoveredBy(o.From) && r.To.CoveredBy(o.To)
	oInR := o.From.CoveredBy(r.From) && o.To.CoveredBy(r.To)
	return rInO || oInR
}

// Message is one business document with its parties and provenance.
type Message struct {
	ID               int64         `json:"id"`
	Stage            MessageStage  `json:"stage"`
	Status           MessageStatus `json:"status"`
	Refusal          Refusal       `json:"-"`
	From             PartyName     `json:"from"`
	To               PartyName     `json:"to"`
	Source           InstanceName  `json:"source"`
	OriginalFileName FileName      `json:"original_file_name"`
	Size             int64         `json:"size"`
	SHA256           string        `json:"sha256"`
	CorrelationID    string        `json:"correlation_id"`
	OriginEventID    string        `json:"origin_event_id"`
	// Metadata are the source's named values (NormalizeMetadata): AS2 headers, a
	// sidecar's or a REST send's metadata object.
	Metadata  map[string]string `json:"metadata,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	// TraceParent is the W3C traceparent of the span that dispatched the message, ""
	// when it was not traced; each delivery attempt's span continues it.
	TraceParent string `json:"-"`
	// ErasedAt is when an operator erased the message's content (see ErasureFilter);
	// nil while it has it.
	ErasedAt *time.Time `json:"erased_at,omitempty"`
}

// Payload records one stored blob of a message. Key is the storage's address for it.
type Payload struct {
	MessageID int64        `json:"message_id"`
	Stage     PayloadStage `json:"stage"`
	Key       string       `json:"-"`
	Size      int64        `json:"size"`
	SHA256    string       `json:"sha256"`
	CreatedAt time.Time    `json:"created_at"`
}

// Delivery is one message to one target.
type Delivery struct {
	ID            int64         `json:"id"`
	MessageID     int64         `json:"message_id"`
	Target        InstanceName  `json:"target"`
	State         DeliveryState `json:"state"`
	Attempts      int           `json:"attempts"`
	NextAttemptAt *time.Time    `json:"next_attempt_at"`
	LastError     string        `json:"last_error"`
	// Wakeups counts wake-ups published since the last claim; at max_dispatches the sweep
	// stalls the delivery.
	Wakeups      int        `json:"-"`
	NextWakeupAt *time.Time `json:"-"`
	LeaseUntil   *time.Time `json:"-"`
	ClaimToken   string     `json:"-"`
	AckDeadline  *time.Time `json:"ack_deadline,omitempty"`
	// SessionKey is set for deliveries of ordered routes; claims never take a delivery
	// while an earlier one of the same session is neither delivered nor skipped.
	SessionKey string `json:"session_key,omitempty"`
	// SessionPosition is how many unsettled deliveries of its session are ahead of it;
	// filled in by ListDeliveries for deliveries with a session.
	SessionPosition *int      `json:"session_position,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	// ExternalRef is what the target answered with when it accepted the document and
	// reports completion later (an in-house system's job id); empty when none.
	ExternalRef string `json:"external_ref,omitempty"`
	// Retry is the retry policy of the route that dispatched the delivery, copied at
	// dispatch (nil: the target's policy applies), so a later edit or deletion of the
	// route leaves deliveries already made as they were.
	Retry *retry.Policy `json:"retry,omitempty"`
	// ErrorClass is the class of the last failure while the delivery is retrying or
	// failed; empty otherwise.
	ErrorClass string `json:"error_class,omitempty"`
	// Downstream is what the receiving side last said (DownstreamStatus of the delivery's
	// history); filled in a message's detail, nil when nothing was said.
	Downstream *Downstream `json:"downstream,omitempty"`

	// CorrelationID and OriginEventID are the message's, copied when the delivery is
	// made, so a delivery is traced without its message.
	CorrelationID string `json:"correlation_id"`
	OriginEventID string `json:"origin_event_id"`
}

// HistoryKind names what a history line records.
type HistoryKind string

const (
	HistoryReceived            HistoryKind = "received"
	HistoryStatusChanged       HistoryKind = "status_changed"
	HistoryDeliveryChanged     HistoryKind = "delivery_changed"
	HistoryDispatched          HistoryKind = "dispatched"
	HistoryRedispatchRequested HistoryKind = "redispatch_requested"
	HistoryRedeliverRequested  HistoryKind = "redeliver_requested"
	HistoryReceiptReceived     HistoryKind = "receipt_received"
	HistoryReceiptRefused      HistoryKind = "receipt_refused"
	HistoryDuplicateReceived   HistoryKind = "duplicate_received"
	HistoryResubmitRequested   HistoryKind = "resubmit_requested"
	HistorySkipRequested       HistoryKind = "skip_requested"
	// HistoryMDNUndeliverable is an asynchronous MDN we owed the sender that could not
	// be delivered within its attempts.
	HistoryMDNUndeliverable HistoryKind = "mdn_undeliverable"
	// HistoryErased is an operator's erasure of the message's content.
	HistoryErased HistoryKind = "erased"
)

// HistoryEntry is one append-only line of a message's history.
type HistoryEntry struct {
	ID         int64       `json:"id"`
	MessageID  int64       `json:"message_id"`
	DeliveryID *int64      `json:"delivery_id,omitempty"`
	At         time.Time   `json:"at"`
	Kind       HistoryKind `json:"kind"`
	FromState  string      `json:"from_state,omitempty"`
	ToState    string      `json:"to_state,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Actor      string      `json:"actor"`
	// ReportedAt is the reporter's own time of a downstream status line; nil otherwise.
	ReportedAt *time.Time `json:"reported_at,omitempty"`

	// CorrelationID and OriginEventID are the message's, written with every line.
	CorrelationID string `json:"correlation_id"`
	OriginEventID string `json:"origin_event_id"`
}

// APIToken is a REST credential; only the SHA-256 of the token is stored.
type APIToken struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Hash       string     `json:"-"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	// Target scopes the token to one target instance: it may only complete and fail
	// deliveries of that target. Empty: the whole REST API.
	Target InstanceName `json:"target,omitempty"`
}

// Certificate is an X.509 certificate, identified by the SHA-256 of its DER encoding, with
// its private key when one was imported. The key is sealed (PKCS#8 under the master key)
// and is opened only where it is used; neither it nor the DER is part of the JSON.
type Certificate struct {
	ID            int64     `json:"id"`
	Fingerprint   string    `json:"fingerprint"` // SHA-256 of DER, lower-case hex
	Subject       string    `json:"subject"`
	Issuer        string    `json:"issuer"`
	SerialNumber  string    `json:"serial_number"` // lower-case hex
	NotBefore     time.Time `json:"not_before"`
	NotAfter      time.Time `json:"not_after"`
	HasPrivateKey bool      `json:"has_private_key"`
	Description   string    `json:"description"`
	DER           []byte    `json:"-"`
	SealedKey     []byte    `json:"-"`
	CreatedAt     time.Time `json:"created_at"`
}

// CertificateUse says that a record names a certificate: Kind is the kind of record (an
// AS2 profile, a receiver, …) and Name its key. A certificate with uses is not deleted.
type CertificateUse struct {
	CertificateID int64  `json:"certificate_id"`
	Kind          string `json:"kind"`
	Name          string `json:"name"`
}

// User is an account of the web UI and the REST API. Credentials are kept only hashed
// or sealed, and none of them, nor the session generation, is part of the JSON.
// UpdatedAt changes with the account (name, role, credentials, state), not with its use
// (sign-ins, accepted TOTP steps, used recovery codes).
type User struct {
	ID          int64    `json:"id"`
	Name        UserName `json:"name"`
	DisplayName string   `json:"display_name"`
	Role        UserRole `json:"role"`
	// PasswordHash is an argon2id PHC string; empty until the user is set up.
	PasswordHash string `json:"-"`
	// SealedTOTP is the TOTP secret sealed under the master key; nil until enrolled.
	SealedTOTP []byte `json:"-"`
	// LastTOTPStep is the last TOTP time step accepted; only later steps are accepted.
	LastTOTPStep int64 `json:"-"`
	// RecoveryHashes are the hashes of the unused recovery codes.
	RecoveryHashes []string `json:"-"`
	Disabled       bool     `json:"disabled"`
	// Generation is part of every session; bumping it ends all of the user's sessions.
	Generation int64 `json:"-"`
	// SetupTokenHash is the SHA-256 (hex) of a pending set-up link's token, empty when
	// none is pending; the token itself is never stored.
	SetupTokenHash string     `json:"-"`
	SetupExpiresAt *time.Time `json:"setup_expires_at,omitempty"`
	// OIDCIssuer and OIDCSubject link the user to an OIDC identity; both or neither are
	// set, and an identity links at most one user.
	OIDCIssuer   string     `json:"oidc_issuer,omitempty"`
	OIDCSubject  string     `json:"oidc_subject,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	LastSignInAt *time.Time `json:"last_sign_in_at"`
}

// SetUp reports whether the user has completed set-up: a password and a TOTP secret.
func (u User) SetUp() bool { return u.PasswordHash != "" && len(u.SealedTOTP) > 0 }

// SetupPending reports whether the user holds a set-up link that is valid at now.
func (u User) SetupPending(now time.Time) bool {
	return u.SetupTokenHash != "" && u.SetupExpiresAt != nil && u.SetupExpiresAt.After(now)
}

// CanSignIn reports whether the user can sign in at now: not disabled, and either set up,
// holding a valid set-up link or linked to an OIDC identity. The store counts and
// protects these users.
func (u User) CanSignIn(now time.Time) bool {
	return !u.Disabled && (u.SetUp() || u.SetupPending(now) || u.OIDCIssuer != "")
}

// State names what the user can do at now, as lists show it: disabled, active, setup
// pending, setup expired or no credentials. A set-up user with a pending reset link is
// active: the old credentials work until the link is used.
func (u User) State(now time.Time) string {
	switch {
	case u.Disabled:
		return "disabled"
	case u.SetUp(), u.OIDCIssuer != "":
		return "active"
	case u.SetupPending(now):
		return "setup pending"
	case u.SetupExpiresAt != nil:
		return "setup expired"
	default:
		return "no credentials"
	}
}

// IdentityProvider is an OpenID Connect provider users sign in with, and whose access
// tokens the REST API accepts. The client secret is sealed under the master key and is
// never part of the JSON.
type IdentityProvider struct {
	Name         string `json:"name"`
	DisplayName  string `json:"display_name"`
	IssuerURL    string `json:"issuer_url"`
	ClientID     string `json:"client_id"`
	SealedSecret []byte `json:"-"`
	// Audience is what the REST API requires in an access token's aud claim; empty means
	// the client ID.
	Audience string `json:"audience"`
	// Scopes are requested besides openid, space-separated.
	Scopes    string    `json:"scopes"`
	Enabled   bool      `json:"enabled"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// TokenAudience is the audience an access token must carry.
func (p IdentityProvider) TokenAudience() string {
	if p.Audience != "" {
		return p.Audience
	}
	return p.ClientID
}

// HandoffReport is an in-house system's report on a delivery it accepted for later
// completion (awaiting_ack): completed, or failed with a reason.
type HandoffReport struct {
	DeliveryID int64
	Completed  bool
	// Text is the reporter's note (completed, optional) or reason (failed, required).
	Text string
	// Reference, when set, must equal the delivery's ExternalRef.
	Reference string
	Actor     string
}
