package receiver

import (
	"net/http"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
)

// provenance is what a partner's message is traced by: the origin event id is its AS2
// Message-ID, and the correlation id the value of the header the partner's profile names
// (correlation_header) or, without one, the Message-ID too. A value the store would
// refuse (longer than persistence.MaxReferenceLen, unprintable) falls back on the
// Message-ID rather than refusing the partner's document; the reason is returned for the
// log. A Message-ID longer than the store takes is cut, the same way on every path, so a
// resend finds the message stored before (findStored).
func provenance(rem profile.Remote, h http.Header, messageID string) (correlationID, originEventID, problem string) {
	origin := cutID(messageID)
	name := strings.TrimSpace(rem.CorrelationHeader)
	if name == "" {
		return origin, origin, ""
	}
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return origin, origin, ""
	}
	if err := persistence.CheckReference(v); err != nil {
		return origin, origin, "the " + name + " header " + err.Error() + "; the Message-ID is the correlation id"
	}
	return v, origin, ""
}
