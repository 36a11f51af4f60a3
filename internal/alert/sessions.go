package alert

import (
	"fmt"
	"strconv"
	"time"

	"wharf/internal/persistence"
)

// BlockedSession describes an ordered session for its alert: the session, the parties
// of its latest dispatch and the failed delivery that blocks it.
type BlockedSession struct {
	Key        string
	Target     persistence.InstanceName
	From, To   persistence.PartyName
	DeliveryID int64
	MessageID  int64
	Reason     string
	// At is when the session was blocked (the commit's time), the alert's time.
	At time.Time
}

// sessionSubject is the subject of a session's alerts: one dedupe key per session, so
// the resolution finds its alert.
func sessionSubject(key string) Subject {
	return Subject{Kind: "session", ID: key}
}

// ForSession is the session_blocked alert of a session a failed delivery blocked. It
// names the session, its target and parties, the blocking delivery and its sanitized
// reason, never the document.
func ForSession(b BlockedSession) Alert {
	did, mid := strconv.FormatInt(b.DeliveryID, 10), strconv.FormatInt(b.MessageID, 10)
	details := []Detail{{"Session", b.Key}, {"Target", string(b.Target)}, {"From", string(b.From)}, {"To", string(b.To)},
		{"Blocking delivery", did}, {"Message", mid}}
	if b.Reason != "" {
		details = append(details, Detail{"Reason", persistence.SanitizeReason(b.Reason)})
	}
	return Alert{
		Code:    SessionBlocked,
		Subject: sessionSubject(b.Key),
		Summary: fmt.Sprintf("Ordered session %s on %s blocked by delivery %s of message %s", b.Key, b.Target, did, mid),
		Details: details,
		Link:    "/ui/sessions",
		Time:    b.At,
	}
}

// SessionResolution resolves the session_blocked alert of a session that unblocked at
// at: the alerts of the session raised up to then, and not those of a later blocking,
// whichever the notifier hears first.
func SessionResolution(key string, at time.Time) Alert {
	r := Resolution(SessionBlocked, sessionSubject(key))
	r.Time = at
	return r
}
