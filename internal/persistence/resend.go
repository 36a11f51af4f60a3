package persistence

// ResendMode is how a redelivered message presents itself to the receiving side, for a
// protocol that gives each message an identity of its own (the AS2 Message-ID).
type ResendMode string

const (
	// ResendSame sends again under the identity the delivery already used: a receiver
	// that took it answers its stored receipt and processes nothing twice. The default.
	ResendSame ResendMode = "same_message_id"
	// ResendNew sends as a new message, which the receiver processes again.
	ResendNew ResendMode = "new_message"
)

var allResendModes = []ResendMode{ResendSame, ResendNew}

// ParseResendMode parses a resend mode; empty is the default, ResendSame.
func ParseResendMode(s string) (ResendMode, error) {
	if s == "" {
		return ResendSame, nil
	}
	return parseEnum("resend mode", s, allResendModes)
}

// Reason is the text a redeliver_requested history line carries for the mode; the
// history is where a target reads which was asked for (ResendModeOf).
func (m ResendMode) Reason() string {
	if m == ResendNew {
		return "send as a new message"
	}
	return "send again with the same message id"
}

// ResendModeOf reads the mode of a redeliver_requested history line; a line without one
// is the default.
func ResendModeOf(h HistoryEntry) ResendMode {
	if h.Reason == ResendNew.Reason() {
		return ResendNew
	}
	return ResendSame
}
