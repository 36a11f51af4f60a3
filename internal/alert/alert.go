// Package alert is what the gateway tells people: a table of alert codes with their
// default severity, the Alert a producer raises, and the Raiser that takes alerts without
// ever blocking or failing its caller and hands them on (to the bus in production, where
// the notifier module hears them).
package alert

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Severity orders alerts: info < warning < critical.
type Severity string

const (
	SeverityInfo     Severity = "info"
	SeverityWarning  Severity = "warning"
	SeverityCritical Severity = "critical"
)

// AllSeverities lists the severities from the least to the most urgent.
var AllSeverities = []Severity{SeverityInfo, SeverityWarning, SeverityCritical}

// ParseSeverity parses a severity name.
func ParseSeverity(s string) (Severity, error) {
	if i := slices.Index(AllSeverities, Severity(s)); i >= 0 {
		return AllSeverities[i], nil
	}
	return "", fmt.Errorf("invalid severity %q: want info, warning or critical", s)
}

// Rank is the severity's place in AllSeverities; a higher rank is more urgent.
func (s Severity) Rank() int { return slices.Index(AllSeverities, s) }

func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Code names what an alert is about.
type Code string

const (
	MessageFailed       Code = "message_failed"
	MessageNotRouted    Code = "message_not_routed"
	MessageRefused      Code = "message_refused"
	DeliveryStalled     Code = "delivery_stalled"
	AsyncMDNFailed      Code = "async_mdn_failed"
	CertificateExpiring Code = "certificate_expiring"
	CertificateExpired  Code = "certificate_expired"
	PluginFailed        Code = "plugin_failed"
	FileUnroutable      Code = "file_unroutable"
	NotificationTest    Code = "notification_test"
	// DatabaseUnavailable is raised by the health monitor while the database does not
	// answer; it is recorded once the database is back.
	DatabaseUnavailable Code = "database_unavailable"
	// MDNUndeliverable is an asynchronous MDN we owe a partner that could not be
	// delivered within its retry budget.
	MDNUndeliverable Code = "mdn_undeliverable"
	// AlertsHeld is the notifier's summary of the alerts its rate limit held back; it is
	// sent only to the instance that held them.
	AlertsHeld Code = "alerts_held"
	// SessionBlocked is an ordered session stopped by a failed delivery; it resolves when
	// the session unblocks.
	SessionBlocked Code = "session_blocked"
	// PartnerPaused is a partner that sending to stopped, after a refusal it would repeat
	// for every message or by an operator's hand; it resolves when the partner resumes.
	PartnerPaused Code = "partner_paused"
	// EventWebhookDisabled is an event-webhook subscription disabled after failing for its
	// disable_after; it resolves when an operator enables it again.
	EventWebhookDisabled Code = "event_webhook_disabled"
	// StatusCallbackUnapplied is a verified status callback that changed nothing: it named
	// no delivery of its target, or the store refused what it said.
	StatusCallbackUnapplied Code = "status_callback_unapplied"
)

// CodeInfo is one row of the code table.
type CodeInfo struct {
	Code     Code     `json:"code"`
	Label    string   `json:"label"`
	Severity Severity `json:"severity"`
}

// Codes is the table of alert codes, with their label and default severity.
var Codes = []CodeInfo{
	{MessageFailed, "Message failed", SeverityCritical},
	{MessageNotRouted, "Message not routed", SeverityWarning},
	{MessageRefused, "Message refused", SeverityWarning},
	{DeliveryStalled, "Delivery stalled", SeverityCritical},
	{AsyncMDNFailed, "Asynchronous MDN failed", SeverityWarning},
	{CertificateExpiring, "Certificate expiring", SeverityWarning},
	{CertificateExpired, "Certificate expired", SeverityCritical},
	{PluginFailed, "Plugin instance failed", SeverityCritical},
	{FileUnroutable, "File unroutable", SeverityWarning},
	{NotificationTest, "Notification test", SeverityInfo},
	{DatabaseUnavailable, "Database unavailable", SeverityCritical},
	{MDNUndeliverable, "Asynchronous MDN undeliverable", SeverityCritical},
	{AlertsHeld, "Alerts held by the rate limit", SeverityWarning},
	{SessionBlocked, "Ordered session blocked", SeverityCritical},
	{PartnerPaused, "Sending to a partner paused", SeverityCritical},
	{EventWebhookDisabled, "Event webhook disabled", SeverityWarning},
	{StatusCallbackUnapplied, "Status callback not applied", SeverityWarning},
}

// ParseCode parses an alert code.
func ParseCode(s string) (Code, error) {
	for _, c := range Codes {
		if string(c.Code) == s {
			return c.Code, nil
		}
	}
	names := make([]string, len(Codes))
	for i, c := range Codes {
		names[i] = string(c.Code)
	}
	return "", fmt.Errorf("invalid alert code %q: want one of %s", s, strings.Join(names, ", "))
}

// Info returns the code's row of the table.
func (c Code) Info() CodeInfo {
	for _, i := range Codes {
		if i.Code == c {
			return i
		}
	}
	return CodeInfo{Code: c, Label: string(c), Severity: SeverityWarning}
}

func (c *Code) UnmarshalText(b []byte) error {
	v, err := ParseCode(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Subject is the record an alert is about.
type Subject struct {
	Kind string `json:"kind"` // message, delivery, certificate, plugin, file, database, as2_mdn
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

// Detail is one labelled fact of an alert, in the order a reader should see them.
type Detail struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Alert is one thing the gateway tells people. It never carries payload bytes, headers,
// keys or URLs: producers put ids, names, states and sanitized reasons in it.
type Alert struct {
	ID       string    `json:"id"`
	Time     time.Time `json:"time"`
	Severity Severity  `json:"severity"`
	Code     Code      `json:"code"`
	Subject  Subject   `json:"subject"`
	Summary  string    `json:"summary"`
	Details  []Detail  `json:"details,omitempty"`
	// DedupeKey says which alerts are about the same thing (a notifier's cooldown); it
	// defaults to code:kind:id.
	DedupeKey string `json:"dedupe_key"`
	// Link is the web UI page of the subject, a path under /ui/.
	Link string `json:"link,omitempty"`
	// Instance, when set, limits the alert to that notifier instance (a test).
	Instance string `json:"instance,omitempty"`
	// Resolves makes this a notice that the cause is gone rather than a new alert: the
	// notifier marks the unresolved alerts of the same dedupe key resolved at Time and
	// records nothing else (see Resolution).
	Resolves bool `json:"resolves,omitempty"`
	// ResolvedAt is when a recorded alert's cause went away; nil while it lasts. Only
	// the notification log sets it.
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// Resolution is the notice that the cause of the alerts of code about subject is gone:
// raised like an alert, it resolves every unresolved one of the same default dedupe key.
func Resolution(code Code, subject Subject) Alert {
	return Alert{Code: code, Subject: subject, Resolves: true, Summary: code.Info().Label + " resolved"}
}

// Field limits keep an alert one screen long whatever a producer hands in.
const (
	maxSummary = 300
	maxDetail  = 500
	maxDetails = 20
)

// Normalize fills what the producer left out (id, time, severity, dedupe key) and bounds
// the texts; it returns an error for an alert no notifier could use.
func (a *Alert) Normalize(now time.Time) error {
	if _, err := ParseCode(string(a.Code)); err != nil {
		return err
	}
	if a.ID == "" {
		a.ID = NewID()
	}
	if a.Time.IsZero() {
		a.Time = now
	}
	a.Time = a.Time.UTC().Truncate(time.Microsecond)
	if a.Severity == "" {
		a.Severity = a.Code.Info().Severity
	} else if _, err := ParseSeverity(string(a.Severity)); err != nil {
		return err
	}
	if a.Subject.Kind == "" {
		return fmt.Errorf("alert %s: subject kind is required", a.Code)
	}
	a.Summary = clip(oneLine(a.Summary), maxSummary)
	if a.Summary == "" {
		a.Summary = a.Code.Info().Label
	}
	if len(a.Details) > maxDetails {
		a.Details = a.Details[:maxDetails]
	}
	for i := range a.Details {
		a.Details[i].Label = clip(oneLine(a.Details[i].Label), 100)
		a.Details[i].Value = clip(oneLine(a.Details[i].Value), maxDetail)
	}
	if a.DedupeKey == "" {
		a.DedupeKey = string(a.Code) + ":" + a.Subject.Kind + ":" + a.Subject.ID
	}
	a.DedupeKey = clip(a.DedupeKey, 200)
	if a.Link != "" && !strings.HasPrefix(a.Link, "/ui/") {
		a.Link = ""
	}
	return nil
}

// NewID returns a random alert id (32 hex digits).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// oneLine folds line breaks and other control characters into spaces.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029'
	}), " ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
