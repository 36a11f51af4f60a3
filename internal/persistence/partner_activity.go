package persistence

import "time"

// PartnerActivity is a partner's traffic at a glance, for its page, the partner list and
// the dashboard.
type PartnerActivity struct {
	Partner PartyName
	// LastDelivered is the newest message to the partner that was delivered, LastReceived
	// the newest from it that was not refused; zero when there is none.
	LastDelivered, LastReceived time.Time
	// Messages and Failed count the messages either way over the last 24 hours and 7
	// days; Failed are those in error or refused.
	Messages24h, Failed24h, Messages7d, Failed7d int
	// Problems counts the partner's open problems: messages in error, stalled, retrying
	// or held, and those refused in the last 7 days.
	Problems int
	// CertificateExpiry is the soonest expiry of the partner's certificates; zero when it
	// has none.
	CertificateExpiry time.Time
	// Ever is true once any message went either way.
	Ever bool
	// Pause is the partner's pause while sending to it is paused; nil otherwise.
	Pause *PartnerPause
}

// PluginCertificateUse is the kind of certificate use a plugin instance records; every
// other kind is a party's record (a protocol profile) named after its party.
const PluginCertificateUse = "plugin_instance"

// ProblemStatuses are the message statuses that count as an open problem.
var ProblemStatuses = []MessageStatus{StatusError, StatusStalled, StatusRetrying, StatusHeld, StatusRefused}

// PartnerCount is a number of messages of one partner.
type PartnerCount struct {
	Partner PartyName
	Count   int
}

// SetupProgress is how far a new installation got towards its first exchange, read from
// the database for the dashboard's first-run checklist.
type SetupProgress struct {
	// Identity: an organization's record (its protocol profile) uses a certificate of
	// ours, one with its private key. Organization is the first organization, if any.
	Identity     bool
	Organization PartyName
	// Partner: a partner exists; Partner names the first.
	HasPartner bool
	Partner    PartyName
	// Sent: a message went to a partner.
	Sent bool
}
