package receiver

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"wharf/internal/alert"
	"wharf/internal/logging"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/mime"
)

// keepTimeout bounds keeping a refusal, which goes on when the partner hangs up.
const keepTimeout = 30 * time.Second

// refusal is what is kept of a message refused after both AS2 ids named profiles.
type refusal struct {
	// disposition is the one the MDN carried, "" when no MDN was written (a refusal
	// before the body was read, or a partner that asked for none).
	disposition string
	reason      string
	mdn         *builtMDN
}

// keepRefusal records a refused message: a gateway message with status refused, the
// request's headers, its raw body (up to the refused_body_max_mib setting, within the
// partner's refused_body_budget_mib, refusal_budget.go) and the MDN
// as stages, the reason on its history, and a row in as2_refusals. A resend of the same
// Message-ID that is refused again is counted on that row and noted in that message's
// history instead. It returns once the record is durable; a failure is logged and
// changes nothing of the answer. The message with its stages and reason is one
// transaction of the store; the as2_refusals row (the AS2 panel, the repeat count) is
// written after it, so a crash between the two leaves the message without that row and
// a resend of the Message-ID makes a second message.
func (rc *Receiver) keepRefusal(ctx context.Context, x *exchange, ref refusal) {
	if x.in.Remote.Partner == "" || x.env.messageID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer cancel()
	if err := rc.keepRefusalErr(ctx, x, ref); err != nil {
		rc.log.ErrorContext(ctx, "refused AS2 message not recorded", "as2_message_id", x.env.messageID,
			"as2_from", string(x.env.from), "err", err)
		rc.refusalNotRecorded(x, ref, err)
	}
}

// refusalNotRecorded raises the message_refused alert of a refusal the store could not
// take (the database is out of reach, say): the partner was answered, so without the
// alert the refusal would be left only in the log. The alert queue holds it until it
// can be recorded and sent.
func (rc *Receiver) refusalNotRecorded(x *exchange, ref refusal, cause error) {
	if rc.deps.Alerts == nil {
		return
	}
	partner := x.in.Remote.Partner
	a := alert.Alert{
		Code:      alert.MessageRefused,
		Subject:   alert.Subject{Kind: "as2_message", ID: x.env.messageID},
		Summary:   fmt.Sprintf("A message from %s was refused and the refusal could not be recorded", partner),
		DedupeKey: alert.RefusalKey(partner),
	}
	for _, d := range []alert.Detail{
		{Label: "Partner", Value: string(partner)},
		{Label: "Partner AS2 id", Value: string(x.env.from)},
		{Label: "AS2 Message-ID", Value: x.env.messageID},
		{Label: "Disposition", Value: ref.disposition},
		{Label: "Reason", Value: persistence.SanitizeReason(ref.reason)},
		{Label: "Not recorded because", Value: persistence.SanitizeReason(cause.Error())},
	} {
		if d.Value != "" {
			a.Details = append(a.Details, d)
		}
	}
	rc.deps.Alerts.Raise(a)
}

func (rc *Receiver) keepRefusalErr(ctx context.Context, x *exchange, ref refusal) error {
	counted, err := rc.countRefusal(ctx, x, ref)
	if err != nil || counted {
		return err
	}
	row := refusalRow{
		Instance:     rc.name,
		AS2From:      string(x.env.from),
		AS2To:        string(x.env.to),
		AS2MessageID: x.env.messageID,
		Partner:      string(x.in.Remote.Partner),
		Organization: string(x.in.Local.Organization),
		Disposition:  ref.disposition,
		Reason:       persistence.SanitizeReason(ref.reason),
		MDNMode:      x.env.mode,
		BodySize:     -1,
	}
	headers := x.headers
	if headers == nil {
		headers = headerText(x.r)
	}
	extra := []module.ExtraPayload{{Stage: persistence.PayloadHeaders, Body: bytes.NewReader(headers)}}
	if x.body != nil {
		row.BodySize = x.body.size
		if row.BodyKept, row.BodyWithheld, err = rc.refusedBodyKept(ctx, row.Partner, x.body.size); err != nil {
			return err
		}
		if row.BodyKept > 0 {
			var body io.Reader = x.body.reader()
			if row.BodyKept < row.BodySize {
				body = io.LimitReader(body, row.BodyKept)
			}
			extra = append(extra, module.ExtraPayload{Stage: persistence.PayloadReceived, Body: body})
		}
	}
	if ref.mdn != nil {
		row.MDNMessageID = ref.mdn.messageID
		extra = append(extra, module.ExtraPayload{Stage: persistence.PayloadReceipt, Body: bytes.NewReader(receiptEntity(*ref.mdn))})
	}
	fileName := fileNameFromMessageID(x.env.messageID)
	if x.res != nil && x.res.FileName != "" {
		fileName = x.res.FileName
	}
	corr, origin, problem := provenance(x.in.Remote, x.r.Header, x.env.messageID)
	if problem != "" {
		rc.log.WarnContext(ctx, "correlation header not used", "as2_message_id", x.env.messageID, "problem", problem)
	}
	results, err := rc.deps.Ingest.Ingest(ctx, []module.Incoming{{
		Source:        rc.name,
		From:          x.in.Remote.Partner,
		To:            x.in.Local.Organization,
		FileName:      fileName,
		CorrelationID: corr,
		OriginEventID: origin,
		Extra:         extra,
		Refused:       row.Reason,
	}})
	if err != nil {
		return fmt.Errorf("store the refused message: %w", err)
	}
	if len(results) != 1 {
		return fmt.Errorf("ingest returned %d results for one message", len(results))
	}
	if results[0].Err != nil {
		return fmt.Errorf("store the refused message: %w", results[0].Err)
	}
	row.MessageID = results[0].Message.ID
	ctx = logging.WithMessage(ctx, row.MessageID, corr)
	if err := rc.deps.DB.Write(ctx, func(tx module.Tx) error { return insertRefusal(ctx, tx, &row) }); err != nil {
		return fmt.Errorf("record the refusal of message %d: %w", row.MessageID, err)
	}
	return nil
}

// countRefusal counts a refusal on the row of an earlier refusal of the same
// (AS2-From, Message-ID) and notes it in that message's history; it reports false when
// there is no such row.
func (rc *Receiver) countRefusal(ctx context.Context, x *exchange, ref refusal) (bool, error) {
	var messageID int64
	reason := persistence.SanitizeReason(ref.reason)
	err := rc.deps.DB.Write(ctx, func(tx module.Tx) error {
		messageID = 0
		err := tx.QueryRow(ctx, `SELECT message_id FROM as2_refusals WHERE as2_from = ? AND as2_message_id = ?`,
			string(x.env.from), x.env.messageID).Scan(&messageID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE as2_refusals SET count = count + 1, disposition = ?, reason = ?, last_at = ?
			WHERE as2_from = ? AND as2_message_id = ?`,
			ref.disposition, reason, tx.Time(tx.Now()), string(x.env.from), x.env.messageID)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("count the refusal: %w", err)
	}
	if messageID == 0 {
		return false, nil
	}
	note := "AS2 Message-ID " + x.env.messageID + " received again and refused: " + reason
	if err := rc.deps.Store.NoteHistory(ctx, messageID, persistence.HistoryDuplicateReceived, note, "as2:"+string(rc.name)); err != nil {
		return true, fmt.Errorf("note the repeated refusal: %w", err)
	}
	return true, nil
}

// maxOriginID is the longest correlation or origin event id a message takes; a longer
// Message-ID is kept whole on the as2_refusals and as2_inbound rows.
const maxOriginID = persistence.MaxReferenceLen

func cutID(s string) string {
	if len(s) <= maxOriginID {
		return s
	}
	return s[:maxOriginID]
}

// plainReason says in plain words why a message was refused, followed by the cause.
func plainReason(disp mime.Disposition, cause error) string {
	text, ok := plainDispositions[disp.ModifierText()]
	if !ok {
		text = "the message was refused (" + disp.ModifierText() + ")"
	}
	if cause == nil {
		return text
	}
	return text + ": " + strings.TrimSpace(cause.Error())
}

// plainDispositions are the failure descriptions of an MDN in words an operator reads.
var plainDispositions = map[string]string{
	"insufficient-message-security": "the message is not protected as the partner profile demands",
	"integrity-check-failed":        "the content does not match the digest its signature covers",
	"authentication-failed":         "the signature could not be verified with the partner's certificates",
	"decryption-failed":             "the message could not be decrypted with our keys",
	"decompression-failed":          "the message could not be decompressed",
	"duplicate-document":            "the message repeats one received before",
	"duplicate-filename":            "the file name was received before within the profile's window",
	unexpectedFailure:               "the message could not be processed",
}
