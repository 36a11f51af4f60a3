package persistence

import (
	"database/sql/driver"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PartyKind tells organizations (us) from partners (them).
type PartyKind string

const (
	PartyOrganization PartyKind = "organization"
	PartyPartner      PartyKind = "partner"
)

var AllPartyKinds = []PartyKind{PartyOrganization, PartyPartner}

func ParsePartyKind(s string) (PartyKind, error)  { return parseEnum("party kind", s, AllPartyKinds) }
func (v PartyKind) MarshalText() ([]byte, error)  { return textOf(v, ParsePartyKind) }
func (v *PartyKind) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParsePartyKind) }
func (v *PartyKind) Scan(src any) error           { return scanInto(v, src, ParsePartyKind) }
func (v PartyKind) Value() (driver.Value, error)  { return valueOf(v, ParsePartyKind) }

// PluginType names a kind of plugin instance.
type PluginType string

const (
	PluginAS2Receiver         PluginType = "as2-receiver"
	PluginAS2Sender           PluginType = "as2-sender"
	PluginFilePoller          PluginType = "file-poller"
	PluginFileWriter          PluginType = "file-writer"
	PluginHTTPPoster          PluginType = "http-poster"
	PluginNotificationWebhook PluginType = "notification-webhook"
	// PluginEventWebhook is an event-webhook subscription: it sends events, not messages.
	PluginEventWebhook PluginType = "event-webhook"
)

var AllPluginTypes = []PluginType{PluginAS2Receiver, PluginAS2Sender, PluginFilePoller, PluginFileWriter, PluginHTTPPoster, PluginNotificationWebhook, PluginEventWebhook}

func ParsePluginType(s string) (PluginType, error) {
	return parseEnum("plugin type", s, AllPluginTypes)
}
func (v PluginType) MarshalText() ([]byte, error)  { return textOf(v, ParsePluginType) }
func (v *PluginType) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParsePluginType) }
func (v *PluginType) Scan(src any) error           { return scanInto(v, src, ParsePluginType) }
func (v PluginType) Value() (driver.Value, error)  { return valueOf(v, ParsePluginType) }

// MessageStage is who owns a message: its source (accepted), the delivery engine
// (dispatched), or nobody any more (settled).
type MessageStage string

const (
	StageAccepted   MessageStage = "accepted"
	StageDispatched MessageStage = "dispatched"
	StageSettled    MessageStage = "settled"
)

var AllMessageStages = []MessageStage{StageAccepted, StageDispatched, StageSettled}

func ParseMessageStage(s string) (MessageStage, error) {
	return parseEnum("message stage", s, AllMessageStages)
}
func (v MessageStage) MarshalText() ([]byte, error)  { return textOf(v, ParseMessageStage) }
func (v *MessageStage) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParseMessageStage) }
func (v *MessageStage) Scan(src any) error           { return scanInto(v, src, ParseMessageStage) }
func (v MessageStage) Value() (driver.Value, error)  { return valueOf(v, ParseMessageStage) }

// MessageStatus is derived from a message's deliveries by DeriveStatus and stored only as a
// cache of that derivation.
type MessageStatus string

const (
	StatusReceived        MessageStatus = "received"
	StatusInProgress      MessageStatus = "in_progress"
	StatusRetrying        MessageStatus = "retrying"
	StatusAwaitingReceipt MessageStatus = "awaiting_receipt"
	StatusHeld            MessageStatus = "held"
	StatusStalled         MessageStatus = "stalled"
	StatusDelivered       MessageStatus = "delivered"
	StatusSkipped         MessageStatus = "skipped"
	StatusNotRouted       MessageStatus = "not_routed"
	StatusRefused         MessageStatus = "refused"
	StatusError           MessageStatus = "error"
)

var AllMessageStatuses = []MessageStatus{StatusReceived, StatusInProgress, StatusRetrying, StatusAwaitingReceipt, StatusHeld, StatusStalled, StatusDelivered, StatusSkipped, StatusNotRouted, StatusRefused, StatusError}

func ParseMessageStatus(s string) (MessageStatus, error) {
	return parseEnum("message status", s, AllMessageStatuses)
}
func (v MessageStatus) MarshalText() ([]byte, error)  { return textOf(v, ParseMessageStatus) }
func (v *MessageStatus) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParseMessageStatus) }
func (v *MessageStatus) Scan(src any) error           { return scanInto(v, src, ParseMessageStatus) }
func (v MessageStatus) Value() (driver.Value, error)  { return valueOf(v, ParseMessageStatus) }

// Refusal classifies a message that got no deliveries because its source refused it.
type Refusal string

const (
	RefusalNone    Refusal = "none"
	RefusalRefused Refusal = "refused" // the sender's fault: bad signature, unknown party, …
	RefusalError   Refusal = "error"   // our fault: storage failure, unexpected error
)

var AllRefusals = []Refusal{RefusalNone, RefusalRefused, RefusalError}

func ParseRefusal(s string) (Refusal, error)    { return parseEnum("refusal class", s, AllRefusals) }
func (v Refusal) MarshalText() ([]byte, error)  { return textOf(v, ParseRefusal) }
func (v *Refusal) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParseRefusal) }
func (v *Refusal) Scan(src any) error           { return scanInto(v, src, ParseRefusal) }
func (v Refusal) Value() (driver.Value, error)  { return valueOf(v, ParseRefusal) }

// DeliveryState is where one message's delivery to one target stands.
type DeliveryState string

const (
	DeliveryQueued      DeliveryState = "queued"
	DeliveryDelivering  DeliveryState = "delivering"
	DeliveryRetrying    DeliveryState = "retrying"
	DeliveryAwaitingAck DeliveryState = "awaiting_ack"
	DeliveryDelivered   DeliveryState = "delivered"
	DeliveryFailed      DeliveryState = "failed"
	DeliveryStalled     DeliveryState = "stalled"
	DeliveryParked      DeliveryState = "parked"
	DeliverySkipped     DeliveryState = "skipped"
	// DeliveryPaused waits, unattempted, while its partner is paused (PartnerPause).
	DeliveryPaused DeliveryState = "paused"
)

var AllDeliveryStates = []DeliveryState{DeliveryQueued, DeliveryDelivering, DeliveryRetrying, DeliveryAwaitingAck, DeliveryDelivered, DeliveryFailed, DeliveryStalled, DeliveryParked, DeliverySkipped, DeliveryPaused}

func ParseDeliveryState(s string) (DeliveryState, error) {
	return parseEnum("delivery state", s, AllDeliveryStates)
}
func (v DeliveryState) MarshalText() ([]byte, error)  { return textOf(v, ParseDeliveryState) }
func (v *DeliveryState) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParseDeliveryState) }
func (v *DeliveryState) Scan(src any) error           { return scanInto(v, src, ParseDeliveryState) }
func (v DeliveryState) Value() (driver.Value, error)  { return valueOf(v, ParseDeliveryState) }

// Final reports whether nothing more happens to a delivery without an operator.
func (v DeliveryState) Final() bool {
	return v == DeliveryDelivered || v == DeliveryFailed || v == DeliverySkipped
}

// PayloadStage names one stored blob of a message.
type PayloadStage string

const (
	PayloadUnpacked PayloadStage = "unpacked" // the document itself
	PayloadReceived PayloadStage = "received" // the raw body as it arrived
	PayloadHeaders  PayloadStage = "headers"
	PayloadReceipt  PayloadStage = "receipt" // e.g. the MDN
)

var AllPayloadStages = []PayloadStage{PayloadUnpacked, PayloadReceived, PayloadHeaders, PayloadReceipt}

func ParsePayloadStage(s string) (PayloadStage, error) {
	return parseEnum("payload stage", s, AllPayloadStages)
}
func (v PayloadStage) MarshalText() ([]byte, error)  { return textOf(v, ParsePayloadStage) }
func (v *PayloadStage) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParsePayloadStage) }
func (v *PayloadStage) Scan(src any) error           { return scanInto(v, src, ParsePayloadStage) }
func (v PayloadStage) Value() (driver.Value, error)  { return valueOf(v, ParsePayloadStage) }

// UserRole is what a user may do: administrators also manage users and settings.
type UserRole string

const (
	RoleAdmin    UserRole = "admin"
	RoleOperator UserRole = "operator"
)

var AllUserRoles = []UserRole{RoleAdmin, RoleOperator}

func ParseUserRole(s string) (UserRole, error)   { return parseEnum("user role", s, AllUserRoles) }
func (v UserRole) MarshalText() ([]byte, error)  { return textOf(v, ParseUserRole) }
func (v *UserRole) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParseUserRole) }
func (v *UserRole) Scan(src any) error           { return scanInto(v, src, ParseUserRole) }
func (v UserRole) Value() (driver.Value, error)  { return valueOf(v, ParseUserRole) }

var (
	partyNameRE    = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
	instanceNameRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
	userNameRE     = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)
)

// PartyName is the key of an organization or partner.
type PartyName string

func ParsePartyName(s string) (PartyName, error) {
	if !partyNameRE.MatchString(s) {
		return "", fmt.Errorf("invalid party name %q: use 1 to 64 of a-z, 0-9, _ and -", s)
	}
	return PartyName(s), nil
}
func (v PartyName) MarshalText() ([]byte, error)  { return textOf(v, ParsePartyName) }
func (v *PartyName) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParsePartyName) }
func (v *PartyName) Scan(src any) error           { return scanInto(v, src, ParsePartyName) }
func (v PartyName) Value() (driver.Value, error)  { return valueOf(v, ParsePartyName) }

// AnyParty is the wildcard of a route's from or to.
const AnyParty = "*"

// SeedOrganizationDisplayName is the display name of the organization a new installation
// starts with: the same everywhere, so it names nobody to a partner.
const SeedOrganizationDisplayName = "Local organization"

// PartyPattern is a party name or AnyParty, as a route's from and to.
type PartyPattern string

func ParsePartyPattern(s string) (PartyPattern, error) {
	if s == AnyParty {
		return PartyPattern(s), nil
	}
	if _, err := ParsePartyName(s); err != nil {
		return "", fmt.Errorf("invalid party pattern %q: use a party name or *", s)
	}
	return PartyPattern(s), nil
}
func (v PartyPattern) MarshalText() ([]byte, error)  { return textOf(v, ParsePartyPattern) }
func (v *PartyPattern) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParsePartyPattern) }
func (v *PartyPattern) Scan(src any) error           { return scanInto(v, src, ParsePartyPattern) }
func (v PartyPattern) Value() (driver.Value, error)  { return valueOf(v, ParsePartyPattern) }

// Matches reports whether the pattern admits the party.
func (v PartyPattern) Matches(p PartyName) bool { return v == AnyParty || string(v) == string(p) }

// Covers reports whether every party v admits is admitted by o too.
func (v PartyPattern) CoveredBy(o PartyPattern) bool { return o == AnyParty || o == v }

// InstanceName is the key of a plugin instance, unique across all plugin types.
type InstanceName string

func ParseInstanceName(s string) (InstanceName, error) {
	if !instanceNameRE.MatchString(s) {
		return "", fmt.Errorf("invalid instance name %q: use 1 to 64 of a-z, 0-9, _ and -", s)
	}
	return InstanceName(s), nil
}
func (v InstanceName) MarshalText() ([]byte, error)  { return textOf(v, ParseInstanceName) }
func (v *InstanceName) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParseInstanceName) }
func (v *InstanceName) Scan(src any) error           { return scanInto(v, src, ParseInstanceName) }
func (v InstanceName) Value() (driver.Value, error)  { return valueOf(v, ParseInstanceName) }

// UserName is the sign-in name of a user.
type UserName string

func ParseUserName(s string) (UserName, error) {
	if !userNameRE.MatchString(s) {
		return "", fmt.Errorf("invalid user name %q: use 1 to 64 of a-z, 0-9, _, . and -", s)
	}
	return UserName(s), nil
}
func (v UserName) MarshalText() ([]byte, error)  { return textOf(v, ParseUserName) }
func (v *UserName) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParseUserName) }
func (v *UserName) Scan(src any) error           { return scanInto(v, src, ParseUserName) }
func (v UserName) Value() (driver.Value, error)  { return valueOf(v, ParseUserName) }

// FileName is a validated bare file name: no directory part, no traversal, no control
// characters, at most 255 bytes of UTF-8. Targets make it safe for their own file system
// on top of this.
type FileName string

func ParseFileName(s string) (FileName, error) {
	switch {
	case s == "":
		return "", fmt.Errorf("invalid file name: empty")
	case len(s) > 255:
		return "", fmt.Errorf("invalid file name %q: longer than 255 bytes", truncate(s, 40))
	case !utf8.ValidString(s):
		return "", fmt.Errorf("invalid file name %q: not UTF-8", truncate(s, 40))
	case s == "." || s == "..":
		return "", fmt.Errorf("invalid file name %q: not a bare name", s)
	case strings.ContainsAny(s, `/\`) || path.Base(s) != s:
		return "", fmt.Errorf("invalid file name %q: contains a path separator", truncate(s, 40))
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "", fmt.Errorf("invalid file name %q: contains a control character", truncate(s, 40))
		}
	}
	return FileName(s), nil
}
func (v FileName) MarshalText() ([]byte, error)  { return textOf(v, ParseFileName) }
func (v *FileName) UnmarshalText(b []byte) error { return unmarshalInto(v, b, ParseFileName) }
func (v *FileName) Scan(src any) error           { return scanInto(v, src, ParseFileName) }
func (v FileName) Value() (driver.Value, error)  { return valueOf(v, ParseFileName) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ParseProviderName checks the key of an identity provider: the same characters as an
// instance name, as it appears in URLs.
func ParseProviderName(s string) (string, error) {
	if !instanceNameRE.MatchString(s) {
		return "", fmt.Errorf("invalid identity provider name %q: use 1 to 64 of a-z, 0-9, _ and -", s)
	}
	return s, nil
}
