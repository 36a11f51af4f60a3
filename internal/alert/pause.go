package alert

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"wharf/internal/persistence"
)

// pauseSubject is the subject of a partner's pause alerts: one dedupe key per partner, so
// the resumption finds its alert.
func pauseSubject(partner persistence.PartyName) Subject {
	return Subject{Kind: "partner", ID: string(partner)}
}

// ForPartnerPause is the partner_paused alert of a pause: the partner, why, since when,
// how many deliveries wait and the refused message, never the document; its link is the
// partner's page, where an operator resumes it.
func ForPartnerPause(p persistence.PartnerPause) Alert {
	details := []Detail{{"Partner", string(p.Partner)}, {"Reason", persistence.SanitizeReason(p.Reason)},
		{"Paused by", p.Actor}, {"Deliveries waiting", strconv.Itoa(p.Waiting)}}
	if p.MessageID != 0 {
		details = append(details, Detail{"Refused message", strconv.FormatInt(p.MessageID, 10)})
	}
	return Alert{
		Code:    PartnerPaused,
		Subject: pauseSubject(p.Partner),
		Summary: fmt.Sprintf("Sending to partner %s is paused; %d deliveries wait until it is resumed", p.Partner, p.Waiting),
		Details: details,
		Link:    "/ui/partners/" + url.PathEscape(string(p.Partner)),
		Time:    p.PausedAt,
	}
}

// PauseResolution resolves the partner_paused alerts of a partner resumed at at.
func PauseResolution(partner persistence.PartyName, at time.Time) Alert {
	r := Resolution(PartnerPaused, pauseSubject(partner))
	r.Time = at
	return r
}
