package alert

import (
	"fmt"
	"strconv"
	"time"

	"wharf/internal/persistence"
)

// ForMessage is the alert of a message whose status became error (message_failed),
// stalled (delivery_stalled), not_routed (message_not_routed) or refused
// (message_refused); target and reason name the delivery that made it so, or why the
// source refused it. ok is false for any other status. The alert names the parties, the
// file name, the correlation id and the sanitized reason, never the document. Refusals are alike per sending
// party (a partner whose certificate changed has every message refused), so their dedupe
// key is the party's, which a notifier's cooldown then holds to one alert per window.
func ForMessage(m persistence.Message, target persistence.InstanceName, reason string) (a Alert, ok bool) {
	code, what := messageCode(m.Status)
	if code == "" {
		return Alert{}, false
	}
	id := strconv.FormatInt(m.ID, 10)
	summary := fmt.Sprintf("Message %s from %s to %s %s", id, m.From, m.To, what)
	if target != "" {
		summary += " on " + string(target)
	}
	details := []Detail{{"Message", id}, {"From", string(m.From)}, {"To", string(m.To)}}
	// The correlation id leads from the alert to everything of the same origin (the
	// Trace page, GET /api/v1/trace).
	if m.CorrelationID != "" {
		details = append(details, Detail{"Correlation id", m.CorrelationID})
	}
	if m.OriginalFileName != "" {
		details = append(details, Detail{FileNameDetail, string(m.OriginalFileName)})
	}
	if target != "" {
		details = append(details, Detail{"Target", string(target)})
	}
	if reason != "" {
		details = append(details, Detail{"Reason", persistence.SanitizeReason(reason)})
	}
	details = append(details, Detail{"Status", string(m.Status)})
	a = Alert{
		Code:    code,
		Subject: Subject{Kind: "message", ID: id, Name: string(m.OriginalFileName)},
		Summary: summary,
		Details: details,
		Link:    "/ui/messages/" + id,
	}
	if code == MessageRefused {
		a.DedupeKey = RefusalKey(m.From)
	}
	return a, true
}

// FileNameDetail labels the detail in which a message's alert names its file; an erasure
// clears it from the alerts recorded.
const FileNameDetail = "File name"

// RefusalKey is the dedupe key of the message_refused alerts of messages from a party.
func RefusalKey(from persistence.PartyName) string {
	return string(MessageRefused) + ":party:" + string(from)
}

// messageCode is the alert code of a message status, with the words that say it; the
// code is empty for a status that needs nobody.
func messageCode(st persistence.MessageStatus) (Code, string) {
	switch st {
	case persistence.StatusError:
		return MessageFailed, "failed"
	case persistence.StatusStalled:
		return DeliveryStalled, "is stalled"
	case persistence.StatusNotRouted:
		return MessageNotRouted, "matched no route"
	case persistence.StatusRefused:
		return MessageRefused, "was refused"
	}
	return "", ""
}

// MessageResolution is the resolution of the alert ForMessage raised for a message's
// previous status, now that its status is another (a redelivery went through, a
// redispatch found a route); ok is false when the previous status raised none or the
// current one raises the same.
func MessageResolution(m persistence.Message, previous persistence.MessageStatus) (a Alert, ok bool) {
	code, _ := messageCode(previous)
	if now, _ := messageCode(m.Status); code == "" || code == now {
		return Alert{}, false
	}
	return Resolution(code, Subject{Kind: "message", ID: strconv.FormatInt(m.ID, 10)}), true
}

// ForCertificate is the certificate_expiring or certificate_expired alert of a stored
// certificate; it names the certificate, never its key.
func ForCertificate(c persistence.Certificate, expired bool, now time.Time) Alert {
	id := strconv.FormatInt(c.ID, 10)
	code, summary := CertificateExpiring, ""
	days := int(c.NotAfter.Sub(now) / (24 * time.Hour))
	if expired {
		code = CertificateExpired
		summary = fmt.Sprintf("Certificate %s (%s) expired on %s", id, c.Subject, c.NotAfter.UTC().Format("2006-01-02"))
	} else {
		summary = fmt.Sprintf("Certificate %s (%s) expires in %d days, on %s", id, c.Subject, days, c.NotAfter.UTC().Format("2006-01-02"))
	}
	return Alert{
		Code:    code,
		Subject: Subject{Kind: "certificate", ID: id, Name: c.Subject},
		Summary: summary,
		Details: []Detail{
			{"Subject", c.Subject}, {"Issuer", c.Issuer}, {"Fingerprint (SHA-256)", c.Fingerprint},
			{"Not after", c.NotAfter.UTC().Format(time.RFC3339)},
		},
		Link: "/ui/certificates/" + id,
	}
}
