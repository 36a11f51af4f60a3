package receiver

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"wharf/internal/alert"
	"wharf/internal/persistence"
)

// mdnUndeliverable tells of an asynchronous MDN we owed the sender and gave up on: the
// partner never learns whether we took its message and may send it again or count it
// lost, so someone has to tell it. It raises mdn_undeliverable and, when the message
// was kept, writes a line in its history.
func (rc *Receiver) mdnUndeliverable(ctx context.Context, j mdnJob, row inboundRow, cause error) {
	reason := persistence.SanitizeReason(cause.Error())
	partner := row.Partner
	if partner == "" {
		partner = j.AS2To
	}
	a := alert.Alert{
		Code:    alert.MDNUndeliverable,
		Subject: alert.Subject{Kind: "as2_mdn", ID: j.MDNMessageID},
		Summary: fmt.Sprintf("The asynchronous MDN owed to %s could not be delivered after %d attempts", partner, j.Attempts),
	}
	if row.MessageID != 0 {
		id := strconv.FormatInt(row.MessageID, 10)
		a.Subject = alert.Subject{Kind: "message", ID: id, Name: row.FileName}
		a.Summary = fmt.Sprintf("The asynchronous MDN for message %s owed to %s could not be delivered after %d attempts", id, partner, j.Attempts)
		a.Details = append(a.Details, alert.Detail{Label: "Message", Value: id})
		a.Link = "/ui/messages/" + id
	}
	a.Details = append(a.Details,
		alert.Detail{Label: "Partner", Value: partner},
		alert.Detail{Label: "Partner AS2 id", Value: j.AS2To},
		alert.Detail{Label: "AS2 Message-ID", Value: row.AS2MessageID},
		alert.Detail{Label: "MDN Message-ID", Value: j.MDNMessageID},
		alert.Detail{Label: "Attempts", Value: strconv.Itoa(j.Attempts)},
		alert.Detail{Label: "Reason", Value: reason})
	a.Details = slices.DeleteFunc(a.Details, func(d alert.Detail) bool { return d.Value == "" })
	if rc.deps.Alerts != nil {
		rc.deps.Alerts.Raise(a)
	}
	if row.MessageID == 0 {
		return
	}
	note := fmt.Sprintf("asynchronous MDN %s not delivered after %d attempts: %s", j.MDNMessageID, j.Attempts, reason)
	if err := rc.deps.Store.NoteHistory(ctx, row.MessageID, persistence.HistoryMDNUndeliverable, note, "as2:"+string(rc.name)); err != nil {
		rc.log.ErrorContext(ctx, "note the undeliverable MDN in the message's history", "err", err)
	}
}

// mdnDelivered resolves the mdn_undeliverable alert of a kept message once an MDN for it
// went through after all (the partner sent the message again and got the stored MDN).
// Only a message with a job given up on has such an alert.
func (rc *Receiver) mdnDelivered(ctx context.Context, j mdnJob, row inboundRow) {
	if row.MessageID == 0 || rc.deps.Alerts == nil {
		return
	}
	failed, err := hasFailedJob(ctx, rc.deps.DB, j.InboundID)
	if err != nil {
		rc.log.WarnContext(ctx, "look for asynchronous MDNs given up on", "err", err)
		return
	}
	if failed {
		rc.deps.Alerts.Raise(alert.Resolution(alert.MDNUndeliverable,
			alert.Subject{Kind: "message", ID: strconv.FormatInt(row.MessageID, 10)}))
	}
}
