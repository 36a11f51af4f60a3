package receiver

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/mime"
)

// refuseMessage answers a message refused for its content with the MDN the partner
// asked for, carrying the failure's disposition. The message is kept as a refused
// record (keepRefusal) before the answer; the document itself is not stored. Without an
// MDN request the refusal is a 400 naming the disposition.
func (rc *Receiver) refuseMessage(ctx context.Context, w http.ResponseWriter, x *exchange, disp mime.Disposition, cause error) {
	rc.log.WarnContext(ctx, "AS2 message refused", "as2_message_id", x.env.messageID, "as2_from", string(x.env.from),
		"as2_to", string(x.env.to), "disposition", disp.String(), "cause", cause.Error())
	rc.refused(dispositionRefusal(disp))
	ref := refusal{disposition: disp.String(), reason: plainReason(disp, cause)}
	if x.env.mode == MDNNone {
		rc.keepRefusal(ctx, x, ref)
		textAnswer(w, http.StatusBadRequest, "The message was refused: "+disp.ModifierText()+".")
		return
	}
	spec := mdnSpec{
		ourID:             string(x.env.to),
		partnerID:         string(x.env.from),
		originalMessageID: x.env.messageID,
		disposition:       disp,
	}
	if x.env.signedReceipt() && x.in.Signer != nil {
		spec.sign, spec.digest = x.in.Signer, mdnSignDigest(x.env.options, x.in.Signer)
	}
	mdn, err := rc.buildMDN(spec)
	if err != nil {
		rc.log.ErrorContext(ctx, "write error MDN", "as2_message_id", x.env.messageID, "err", err)
		rc.keepRefusal(ctx, x, ref)
		textAnswer(w, http.StatusBadRequest, "The message was refused: "+disp.ModifierText()+".")
		return
	}
	ref.mdn = &mdn
	rc.keepRefusal(ctx, x, ref)
	if x.env.mode == MDNAsync {
		job := &mdnJob{
			Instance:     rc.name,
			URL:          x.env.asyncURL,
			AS2From:      string(x.env.to),
			AS2To:        string(x.env.from),
			MDNMessageID: mdn.messageID,
			ContentType:  mdn.contentType,
			Body:         mdn.body,
		}
		if err := queueJob(ctx, rc.deps.DB, job); err != nil {
			rc.log.ErrorContext(ctx, "queue error MDN", "as2_message_id", x.env.messageID, "err", err)
			textAnswer(w, http.StatusBadRequest, "The message was refused: "+disp.ModifierText()+".")
			return
		}
		rc.kick()
		textAnswer(w, http.StatusOK, "The message was refused; its MDN follows asynchronously.")
		return
	}
	row := inboundRow{AS2From: string(x.env.from), AS2To: string(x.env.to), MDNMessageID: mdn.messageID,
		MDNContentType: mdn.contentType, MDNBody: mdn.body}
	writeMDN(w, &row, rc.productName(), rc.now())
}

// refuseRequest refuses a request before its message is read or opened: a bad header,
// an unknown party, a size over the limit. No MDN is written, since the request may not
// even come from a partner. Once both AS2 ids named profiles the request is kept as a
// refused message (its headers); before that it is counted among the unknown senders.
func (rc *Receiver) refuseRequest(ctx context.Context, w http.ResponseWriter, x *exchange, status int, text string, cause error) {
	attrs := []any{"status", status, "reason", text, "remote", x.r.RemoteAddr}
	if x.env.messageID != "" {
		attrs = append(attrs, "as2_message_id", x.env.messageID)
	}
	if cause != nil && !errors.Is(cause, persistence.ErrNotFound) {
		attrs = append(attrs, "cause", cause.Error())
	}
	rc.log.WarnContext(ctx, "AS2 request refused", attrs...)
	rc.refused(requestRefusal(status))
	if x.in.Remote.Partner != "" {
		rc.keepRefusal(ctx, x, refusal{reason: text})
	} else {
		rc.countUnknownSender(x.r, text)
	}
	// The body may be unread; closing the connection spares reading it.
	w.Header().Set("Connection", "close")
	textAnswer(w, status, text)
}

// unavailable answers a failure of ours (database, storage): 503, so the partner sends
// again later; nothing was promised.
func (rc *Receiver) unavailable(ctx context.Context, w http.ResponseWriter, x *exchange, what string, err error) {
	rc.log.ErrorContext(ctx, "AS2 request failed: "+what, "as2_message_id", x.env.messageID, "err", err)
	rc.refused(refusedUnavailable)
	w.Header().Set("Retry-After", "60")
	textAnswer(w, http.StatusServiceUnavailable, "The gateway cannot take the message now; send it again later.")
}

func (rc *Receiver) busy(ctx context.Context, w http.ResponseWriter, x *exchange, text string) {
	rc.log.InfoContext(ctx, "AS2 request deferred", "as2_message_id", x.env.messageID, "reason", text)
	rc.refused(refusedRepeatBusy)
	// Within a lease the row is finished, or stale and taken over by the resend.
	w.Header().Set("Retry-After", strconv.Itoa(int(reservationLease/time.Second)))
	textAnswer(w, http.StatusServiceUnavailable, text)
}

func textAnswer(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(text + "\r\n"))
}
