package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"wharf/internal/audit"
	"wharf/internal/retry"
)

// Sentinel errors every Store implementation returns (wrapped with context), so callers
// map them to HTTP and CLI answers without knowing the database.
var (
	ErrNotFound  = errors.New("not found")
	ErrConflict  = errors.New("conflict")
	ErrInUse     = errors.New("in use")
	ErrLostClaim = errors.New("claim lost")
	// ErrUnavailable marks a failure to reach the database at all (refused or lost
	// connection, the server shutting down), as opposed to a query it refused.
	ErrUnavailable = errors.New("database unavailable")
	// ErrLastUser refuses a change that would leave nobody (or no administrator) able
	// to sign in.
	ErrLastUser = errors.New("last user")

	// ErrDeliverySettled refuses a handoff report for a delivery already delivered,
	// failed or skipped: the first settlement stands.
	ErrDeliverySettled = fmt.Errorf("delivery already settled: %w", ErrConflict)
	// ErrDeliveryNotAwaiting refuses a handoff report for a delivery that is not waiting
	// for one (queued, being attempted, retrying, …).
	ErrDeliveryNotAwaiting = fmt.Errorf("delivery is not awaiting completion: %w", ErrConflict)
	// ErrReferenceMismatch refuses a handoff report whose reference is not the one the
	// target answered with.
	ErrReferenceMismatch = fmt.Errorf("reference does not match the delivery's: %w", ErrConflict)
)

// FieldError says which input field was wrong and why. Stores return it (wrapped) for
// references to records that do not exist, such as a route naming a missing instance.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Message) }

// ListOptions pages a list. A zero Limit means the implementation's default (100).
type ListOptions struct {
	Limit  int
	Offset int
}

// AuditFilter selects audit events for a list; zero fields do not filter.
type AuditFilter struct {
	Actor    string
	Kind     string
	Action   string
	RecordID string
	AfterID  int64
	Since    time.Time // at or after
	Until    time.Time // before
	ListOptions
}

// MessageFilter selects messages for a list; zero fields do not filter.
type MessageFilter struct {
	Status MessageStatus
	From   PartyName
	To     PartyName
	Source InstanceName
	Since  time.Time // created at or after
	Until  time.Time // created before
	Q      string    // substring of original file name, correlation id or origin event id
	// Partner is the party at either end: messages from it and to it.
	Partner PartyName
	// Direction keeps messages whose sender (inbound) or recipient (outbound) is a partner.
	Direction Direction
	// Statuses keeps messages in any of these statuses (besides Status, when set).
	Statuses []MessageStatus
	// IDs keeps only these messages (a module's lookup, e.g. by AS2 Message-ID); a non-nil
	// empty list keeps none.
	IDs []int64
	ListOptions
}

// NewMessage is a message to insert with its payload records. The message's ID comes
// from AllocateMessageIDs, so its blobs can be written before its rows.
type NewMessage struct {
	Message  Message
	Payloads []Payload
	// Dispatch inserts the deliveries for Targets in the same transaction and moves the
	// message to stage dispatched; with no targets it is not routed. Without Dispatch the
	// message stays accepted and its source dispatches it later.
	Dispatch bool
	Targets  []InstanceName
	// Sessions are the ordered sessions of the deliveries by target; a target missing
	// here gets an unordered delivery.
	Sessions map[InstanceName]DeliverySession
	// Retry holds, by target, the retry policy of the route that dispatches it, copied
	// onto the delivery; a target without one keeps its own policy.
	Retry map[InstanceName]*retry.Policy
	Actor string
	// ByOperator records the insert in the audit log as a message sent by hand by Actor.
	ByOperator bool
	// RefusalReason says in plain words why a message with a refusal class was refused;
	// it becomes the reason of its dispatched history line.
	RefusalReason string
}

// Claim is a delivery taken by a worker under a lease, with its message and the payload
// row of its document (stage unpacked; zero when the message has none), read in the
// claim's transaction so an attempt needs no read of its own to open the document.
type Claim struct {
	Delivery Delivery
	Message  Message
	// Document is the message's unpacked stage, read in the claim's transaction, so an
	// attempt opens its document without a round trip of its own; a zero Key (a queue
	// without documents, a message without the stage) leaves the lookup to the worker.
	Document Payload
}

// OutcomeKind is what a target's attempt came to.
type OutcomeKind string

const (
	OutcomeDelivered   OutcomeKind = "delivered"
	OutcomeAwaitingAck OutcomeKind = "awaiting_ack"
	OutcomeRetry       OutcomeKind = "retry"
	OutcomeFailed      OutcomeKind = "failed"
)

// Completion records the outcome of one claimed attempt; it applies only while Token
// still holds the claim.
type Completion struct {
	DeliveryID    int64
	Token         string
	Kind          OutcomeKind
	NextAttemptAt time.Time // for OutcomeRetry
	AckDeadline   time.Time // for OutcomeAwaitingAck
	// ExternalRef is the target's reference for an OutcomeAwaitingAck (an in-house
	// system's job id), at most MaxExternalRefBytes of printable ASCII; empty for none.
	ExternalRef string
	Reason      string
	// ErrorClass is the failure's class (retry.Class) for a retry or a failure; the
	// delivery keeps it until it succeeds.
	ErrorClass string
	At         time.Time
	// Payloads are stages the attempt stored (a receipt), recorded with the outcome. They
	// are recorded even when the claim is lost: the blobs are durable and a receipt stays
	// a receipt. A stage the message already has is left as it is.
	Payloads []Payload
	// Pause, when not empty, pauses the message's partner with this reason in the
	// outcome's transaction: the refusal will repeat for every message (PartnerPause).
	// It applies only while the claim holds.
	Pause string

	// Downstream are what the receiving side said in the attempt's answer (a synchronous
	// MDN), recorded as downstream status lines, like Payloads even when the claim is lost.
	Downstream []DownstreamReport
}

// Release hands back a claim that was interrupted (at shutdown) without counting it as a
// failure: the delivery becomes due again at once.
type Release struct {
	DeliveryID int64
	Token      string
	Reason     string
}

// SeedData is what a new database starts with.
type SeedData struct {
	Organizations []Party
	Plugins       []PluginConfig
	Routes        []Route
	Settings      map[string]string
}

// WakeupPolicy steers the sweep's wake-ups for due deliveries nobody claimed.
type WakeupPolicy struct {
	MaxDispatches int                             // unanswered wake-ups before stalled
	Backoff       func(wakeups int) time.Duration // delay after the n-th unanswered wake-up
}

// Store is everything the core keeps. One implementation serves SQLite and PostgreSQL;
// every method is one transaction; state changes are conditional on the state read.
type Store interface {
	RetentionStore

	// Seed fills a new database once; it reports whether it did.
	Seed(ctx context.Context, data SeedData) (bool, error)

	CreateParty(ctx context.Context, p Party) (Party, error)
	GetParty(ctx context.Context, kind PartyKind, name PartyName) (Party, error)
	ListParties(ctx context.Context, kind PartyKind, opt ListOptions) ([]Party, int, error)
	UpdateParty(ctx context.Context, p Party) (Party, error)
	// DeleteParty refuses with ErrInUse while a route names the party.
	DeleteParty(ctx context.Context, kind PartyKind, name PartyName) error

	// CreatePluginConfig refuses with ErrConflict a name taken by any type.
	CreatePluginConfig(ctx context.Context, c PluginConfig) (PluginConfig, error)
	GetPluginConfig(ctx context.Context, name InstanceName) (PluginConfig, error)
	// ListPluginConfigs lists every instance, or those of typ when it is not empty.
	ListPluginConfigs(ctx context.Context, typ PluginType) ([]PluginConfig, error)
	UpdatePluginConfig(ctx context.Context, c PluginConfig) (PluginConfig, error)
	// DeletePluginConfig refuses with ErrInUse while a route names the instance.
	DeletePluginConfig(ctx context.Context, name InstanceName) error

	// CreateRoute refuses a missing source or target (FieldError) and a route that covers
	// or is covered by another with the same source and target (ErrConflict).
	CreateRoute(ctx context.Context, r Route) (Route, error)
	// UpdateRoute replaces a route's fields with the checks of CreateRoute (its own
	// coverage aside); ErrNotFound when it does not exist.
	UpdateRoute(ctx context.Context, r Route) (Route, error)
	GetRoute(ctx context.Context, id int64) (Route, error)
	ListRoutes(ctx context.Context) ([]Route, error)
	DeleteRoute(ctx context.Context, id int64) error

	// AllocateMessageIDs reserves n consecutive message ids and returns the first.
	AllocateMessageIDs(ctx context.Context, n int) (int64, error)
	// InsertMessages stores messages, their payload records and (when asked) their
	// deliveries, history and derived status, all in one transaction.
	InsertMessages(ctx context.Context, msgs []NewMessage) ([]Message, error)
	GetMessage(ctx context.Context, id int64) (Message, error)
	// FindMessageByOrigin finds the newest message source stored with originEventID for
	// delivery; a record of a document the source refused is not one.
	FindMessageByOrigin(ctx context.Context, source InstanceName, originEventID string) (Message, error)
	ListMessages(ctx context.Context, f MessageFilter) ([]Message, int, error)
	// PartnerActivity reads a partner's traffic at a glance as of now.
	PartnerActivity(ctx context.Context, partner PartyName, now time.Time) (PartnerActivity, error)
	// PartnerCertificates lists the certificates the partner's records (its protocol
	// profiles) use, soonest expiry first.
	PartnerCertificates(ctx context.Context, partner PartyName) ([]Certificate, error)
	// CountProblemsByPartner counts each partner's open problems (as PartnerActivity
	// does, refusals since refusedSince), most first, at most limit partners.
	CountProblemsByPartner(ctx context.Context, refusedSince time.Time, limit int) ([]PartnerCount, error)
	// SetupProgress reads how far the installation got towards its first exchange.
	SetupProgress(ctx context.Context) (SetupProgress, error)
	// CountMessagesByStatus counts messages by status in one query: all of them, and those
	// created at or after each time of since. Statuses without messages are left out.
	CountMessagesByStatus(ctx context.Context, since ...time.Time) ([]StatusCount, error)
	// CountMessagesPerHour counts the messages created at or after since by the UTC hour
	// of their creation and their status, in hour then status order.
	CountMessagesPerHour(ctx context.Context, since time.Time) ([]HourCount, error)
	ListDeliveries(ctx context.Context, messageID int64) ([]Delivery, error)
	GetDelivery(ctx context.Context, id int64) (Delivery, error)
	ListHistory(ctx context.Context, messageID int64) ([]HistoryEntry, error)
	// Trace returns every message with one origin event id or correlation id, with its
	// deliveries and history, from one statement.
	Trace(ctx context.Context, q TraceQuery) (Trace, error)
	// RecordUnknownSenders counts requests refused before their sender was known, in one
	// transaction, keeping at most MaxUnknownSenders rows.
	RecordUnknownSenders(ctx context.Context, hits []UnknownSenderHit) error
	// ListUnknownSenders lists the counted unknown senders, last seen first.
	ListUnknownSenders(ctx context.Context, o ListOptions) ([]UnknownSender, int, error)
	// NoteHistory appends a line about the message itself (a duplicate received, …) that
	// changes no state.
	NoteHistory(ctx context.Context, messageID int64, kind HistoryKind, reason, actor string) error
	ListPayloads(ctx context.Context, messageID int64) ([]Payload, error)
	GetPayload(ctx context.Context, messageID int64, stage PayloadStage) (Payload, error)
	AddPayload(ctx context.Context, p Payload) error

	// Redispatch adds deliveries for targets the message lacks (in the sessions given by
	// target, each with the retry override of its route from overrides) and requeues its
	// queued and stalled ones (which keep theirs); it returns the deliveries now due.
	Redispatch(ctx context.Context, messageID int64, targets []InstanceName, sessions map[InstanceName]DeliverySession, overrides map[InstanceName]*retry.Policy, actor string) ([]Delivery, error)
	// Redeliver requeues one failed, stalled, retrying or delivered delivery; other states
	// are ErrConflict.
	// The history's redeliver_requested line records mode (ResendMode.Reason).
	Redeliver(ctx context.Context, deliveryID int64, mode ResendMode, actor string) (Delivery, error)

	// ResubmitDeliveries attempts failed or stalled deliveries again, due now, in one
	// transaction; the parked deliveries behind a blocking one stay parked until it is
	// delivered. Each id has its result; a state the action does not apply to is
	// ErrConflict.
	ResubmitDeliveries(ctx context.Context, ids []int64, actor string) ([]DeliveryActionResult, error)
	// SkipDeliveries marks failed or parked deliveries skipped in one transaction; a
	// skipped blocking delivery unblocks its session and releases the parked ones.
	SkipDeliveries(ctx context.Context, ids []int64, actor string) ([]DeliveryActionResult, error)
	// ListBlockedSessions lists the blocked ordered sessions, longest blocked first, with
	// the total count.
	ListBlockedSessions(ctx context.Context, f SessionFilter) ([]BlockedSession, int, error)
	// CountDeliveriesByState counts every delivery by state; states without any are
	// left out.
	CountDeliveriesByState(ctx context.Context) (map[DeliveryState]int, error)

	// ListDeadLetters lists failed and parked deliveries with their messages' parties and
	// file names, oldest first, with the total count.
	ListDeadLetters(ctx context.Context, f DeadLetterFilter) ([]DeadLetter, int, error)
	// ActOnDeliveries applies a bulk action to at most MaxBulkDeliveries ids in one
	// transaction, with each delivery's history and audit event and one audit event
	// naming the actor and how many deliveries it changed. Each id has its result; a
	// state the action does not apply to is ErrConflict.
	ActOnDeliveries(ctx context.Context, action DeliveryAction, ids []int64, actor string) ([]DeliveryActionResult, error)

	// ClaimDeliveries takes up to n due deliveries of target (queued, or retrying with
	// next_attempt_at reached), oldest first, skipping any whose session has an earlier
	// unfinished delivery; each gets state delivering, a fresh token and a lease.
	ClaimDeliveries(ctx context.Context, target InstanceName, n int, lease time.Duration, now time.Time) ([]Claim, error)
	// RenewLease extends a lease while the token holds; otherwise ErrLostClaim.
	RenewLease(ctx context.Context, deliveryID int64, token string, until time.Time) error
	// CompleteDeliveries applies outcomes in one transaction; the result has one entry per
	// completion, nil or ErrLostClaim.
	CompleteDeliveries(ctx context.Context, cs []Completion) ([]error, error)
	ReleaseDeliveries(ctx context.Context, rs []Release) error

	// SettleDelivery applies a receipt (an MDN, a status callback) to a delivery that is
	// delivering, awaiting_ack or retrying: delivered, or failed with reason. It clears
	// any claim, so a worker's later outcome for the attempt is ErrLostClaim. A delivery
	// already delivered or failed is returned unchanged (a receipt never downgrades, the
	// first failure's reason stands); queued, stalled and other states are ErrConflict.
	SettleDelivery(ctx context.Context, deliveryID int64, delivered bool, reason, actor string) (Delivery, error)
	// RefuseDeliveryPausing is SettleDelivery of a refusal that will repeat for every
	// message: when it fails the delivery, it also pauses the message's partner with
	// pause as the reason, in the same transaction.
	RefuseDeliveryPausing(ctx context.Context, deliveryID int64, reason, pause, actor string) (Delivery, error)

	// PausePartner pauses sending to a partner by hand (see PartnerPause): its waiting
	// deliveries through the partner protocols' targets become paused. A partner paused
	// already is ErrConflict, an unknown one ErrNotFound.
	PausePartner(ctx context.Context, partner PartyName, reason, actor string) (PartnerPause, error)
	// ResumePartner ends a partner's pause and queues its paused deliveries, due now,
	// with history naming actor; it returns them. A partner not paused is ErrConflict.
	ResumePartner(ctx context.Context, partner PartyName, actor string) ([]Delivery, error)
	// GetPartnerPause reads a partner's pause; ErrNotFound when it is not paused.
	GetPartnerPause(ctx context.Context, partner PartyName) (PartnerPause, error)
	// ListPartnerPauses lists the paused partners, longest paused first.
	ListPartnerPauses(ctx context.Context) ([]PartnerPause, error)
	// SettleHandoff applies an in-house system's report to an awaiting_ack delivery:
	// delivered, or failed with the report's reason, with a history line naming the
	// actor. A delivery already final is ErrDeliverySettled, any other state
	// ErrDeliveryNotAwaiting, a reference other than the stored one ErrReferenceMismatch;
	// each writes nothing.
	SettleHandoff(ctx context.Context, r HandoffReport) (Delivery, error)
	// SettleReceipt records a downstream status (an AS2 MDN) for a delivery and lets a
	// terminal one settle it as SettleDelivery does; other states keep the delivery as it
	// is, with the line recorded all the same.
	SettleReceipt(ctx context.Context, r DownstreamReport) (Delivery, error)

	// Signed status callbacks (docs/callbacks.md): the signing secrets of a target
	// instance, sealed, and applying verified callbacks.
	CreateCallbackSecret(ctx context.Context, target InstanceName, sealed []byte) (CallbackSecret, error)
	ListCallbackSecrets(ctx context.Context, target InstanceName) ([]CallbackSecret, error)
	RevokeCallbackSecret(ctx context.Context, target InstanceName, id int64) error
	// TouchCallbackSecret records a secret's use, at most once a minute.
	TouchCallbackSecret(ctx context.Context, sec CallbackSecret) error
	// ApplyCallbacks applies callbacks in one transaction, each at most once per
	// (target, webhook-id), and says what became of each.
	ApplyCallbacks(ctx context.Context, cbs []StatusCallback) ([]CallbackOutcome, error)

	// ExpireLeases turns deliveries whose lease ran out into retrying, due now.
	ExpireLeases(ctx context.Context, now time.Time, limit int) ([]Delivery, error)
	// WakeDue picks due queued and retrying deliveries whose next wake-up is reached: each
	// either gets another wake-up (returned in woken, with its back-off recorded) or, past
	// MaxDispatches unanswered wake-ups, becomes stalled (returned in stalled).
	WakeDue(ctx context.Context, now time.Time, p WakeupPolicy, limit int) (woken, stalled []Delivery, err error)
	// ExpireAcks fails deliveries whose receipt deadline passed.
	ExpireAcks(ctx context.Context, now time.Time, limit int) ([]Delivery, error)

	// CreateCertificates stores certificates in one transaction. A fingerprint already
	// stored (or given twice) is ErrConflict naming it, and nothing is written.
	CreateCertificates(ctx context.Context, certs []Certificate) ([]Certificate, error)
	GetCertificate(ctx context.Context, id int64) (Certificate, error)
	// ListCertificates lists certificates, soonest expiry first, with the total count.
	ListCertificates(ctx context.Context, opt ListOptions) ([]Certificate, int, error)
	// DeleteCertificate refuses with ErrInUse while a record uses the certificate.
	DeleteCertificate(ctx context.Context, id int64) error
	// SetCertificateUses replaces the certificates the record (kind, name) uses with ids;
	// no ids removes its uses. A missing certificate is a FieldError.
	SetCertificateUses(ctx context.Context, kind, name string, ids []int64) error
	// ListCertificateUses lists the records that use a certificate.
	ListCertificateUses(ctx context.Context, id int64) ([]CertificateUse, error)

	ListSettings(ctx context.Context) (map[string]string, error)
	GetSetting(ctx context.Context, key string) (string, error)
	PutSetting(ctx context.Context, key, value string) error

	CreateAPIToken(ctx context.Context, name, hash string) (APIToken, error)
	// CreateScopedAPIToken is CreateAPIToken for a token that may only settle deliveries
	// of the target instance target (empty: not scoped).
	CreateScopedAPIToken(ctx context.Context, name, hash string, target InstanceName) (APIToken, error)
	ListAPITokens(ctx context.Context) ([]APIToken, error)
	RevokeAPIToken(ctx context.Context, name string) error
	// FindAPIToken finds an unrevoked token by its hash.
	FindAPIToken(ctx context.Context, hash string) (APIToken, error)

	// CreateUser stores an account; a taken name (or OIDC identity, or set-up token hash)
	// is ErrConflict. The store sets its generation to 1 and its times.
	CreateUser(ctx context.Context, u User) (User, error)
	GetUser(ctx context.Context, id int64) (User, error)
	GetUserByName(ctx context.Context, name UserName) (User, error)
	// GetUserByOIDC finds the user linked to the OIDC identity (issuer, subject).
	GetUserByOIDC(ctx context.Context, issuer, subject string) (User, error)
	// ListUsers lists users by name, with the total count.
	ListUsers(ctx context.Context, opt ListOptions) ([]User, int, error)
	// CountActiveUsers counts the users who can sign in (see User.CanSignIn).
	CountActiveUsers(ctx context.Context) (int, error)
	// SetUserSetupToken gives the user a one-time set-up link: the SHA-256 (hex) of its
	// token, valid until expires. It replaces any earlier link of the user.
	SetUserSetupToken(ctx context.Context, id int64, tokenHash string, expires time.Time) error
	// ConsumeUserSetupToken finds the enabled user whose unexpired link has tokenHash and
	// clears the link, so it works once; an unknown, used or expired link is ErrNotFound.
	ConsumeUserSetupToken(ctx context.Context, tokenHash string, now time.Time) (User, error)
	// FindUserBySetupToken finds the enabled user whose unexpired set-up link has
	// tokenHash without using the link; otherwise ErrNotFound.
	FindUserBySetupToken(ctx context.Context, tokenHash string, now time.Time) (User, error)
	// CompleteUserSetupWithToken is CompleteUserSetup for user id on the condition that
	// its set-up link tokenHash is still unused and unexpired at now, in one transaction:
	// of two forms posted with one link one completes, and a failure leaves the link
	// usable. A used, expired or unknown link is ErrNotFound.
	CompleteUserSetupWithToken(ctx context.Context, id int64, tokenHash string, now time.Time, passwordHash string, sealedTOTP []byte, recoveryHashes []string) (User, error)
	// CompleteUserSetup sets the password hash, sealed TOTP secret and recovery code
	// hashes together, clears any set-up link and bumps the generation.
	CompleteUserSetup(ctx context.Context, id int64, passwordHash string, sealedTOTP []byte, recoveryHashes []string) (User, error)
	// SetUserPassword and SetUserTOTP replace a credential and bump the generation, ending
	// every session of the user; the returned user carries the new generation, so the
	// session that made the change can be renewed.
	SetUserPassword(ctx context.Context, id int64, hash string) (User, error)
	SetUserTOTP(ctx context.Context, id int64, sealed []byte) (User, error)
	// SetUserRecoveryCodes replaces the recovery code hashes. It ends no session: the old
	// codes stop working with it, and nothing a session holds depends on them.
	SetUserRecoveryCodes(ctx context.Context, id int64, hashes []string) (User, error)
	// AcceptTOTPStep records step as the user's last accepted TOTP step; a step at or
	// below the stored one is ErrConflict, so a code is accepted once, even under
	// concurrent sign-ins.
	AcceptTOTPStep(ctx context.Context, id int64, step int64) error
	// UseRecoveryCode removes the recovery code at index if its hash is still
	// expectedHash; otherwise (used meanwhile, or out of range) ErrConflict.
	UseRecoveryCode(ctx context.Context, id int64, index int, expectedHash string) error
	// SetUserDisabled disables (bumping the generation) or enables a user. Disabling the
	// last user who can sign in, or the last administrator who can, is ErrLastUser.
	SetUserDisabled(ctx context.Context, id int64, disabled bool) error
	// SetUserRole changes a user's role; demoting the last administrator who can sign in
	// is ErrLastUser. The generation is kept: sessions read the role from the user.
	SetUserRole(ctx context.Context, id int64, role UserRole) (User, error)
	// BumpUserGeneration ends every session of the user.
	BumpUserGeneration(ctx context.Context, id int64) error
	// DeleteUser deletes a user; the last user (or administrator) who can sign in is
	// ErrLastUser.
	DeleteUser(ctx context.Context, id int64) error
	// TouchUserSignIn records a successful sign-in.
	TouchUserSignIn(ctx context.Context, id int64, at time.Time) error

	// CreateIdentityProvider refuses with ErrConflict a taken name or issuer URL.
	CreateIdentityProvider(ctx context.Context, p IdentityProvider) (IdentityProvider, error)
	GetIdentityProvider(ctx context.Context, name string) (IdentityProvider, error)
	// ListIdentityProviders lists every provider by name.
	ListIdentityProviders(ctx context.Context) ([]IdentityProvider, error)
	// UpdateIdentityProvider replaces a provider's fields but its name and creation time.
	UpdateIdentityProvider(ctx context.Context, p IdentityProvider) (IdentityProvider, error)
	DeleteIdentityProvider(ctx context.Context, name string) error

	// RecordAudit writes an audit event about an operator action that changes no row
	// (a service restarted); changes to records are audited by their own methods, in
	// their transactions. The actor comes from ctx (audit.WithActor).
	RecordAudit(ctx context.Context, action, kind, recordID, recordName string, changes []audit.Change) error
	// ListAudit lists audit events newest first, with the total count.
	ListAudit(ctx context.Context, f AuditFilter) ([]audit.Event, int, error)
	// EachAudit calls fn with every audit event after afterID, oldest first.
	EachAudit(ctx context.Context, afterID int64, fn func(audit.Event) error) error
	// VerifyAudit checks the audit log's hash chain: changed, missing and reordered events.
	VerifyAudit(ctx context.Context) (checked int, problems []audit.Problem, err error)

	Close() error
}
