package receiver

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	"wharf/internal/logging"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// takeDuplicate answers a message whose (AS2-From, Message-ID) is known.
func (rc *Receiver) takeDuplicate(ctx context.Context, w http.ResponseWriter, x *exchange, existing inboundRow) {
	if existing.MessageID != 0 {
		ctx = logging.WithMessageID(ctx, existing.MessageID)
	}
	if !sameContent(existing, x.res) {
		rc.refuseMessage(ctx, w, x, failureDisposition(errMessageIDReused, nil),
			fmt.Errorf("%w (first received %s)", errMessageIDReused, existing.ReceivedAt.UTC().Format(time.RFC3339)))
		return
	}
	if existing.State == stateAnswered {
		rc.log.InfoContext(ctx, "duplicate AS2 message: nothing stored, the MDN is answered again",
			"as2_message_id", existing.AS2MessageID, "as2_from", existing.AS2From, "mdn", string(x.env.mode))
		if existing.MessageID != 0 {
			reason := "AS2 Message-ID " + existing.AS2MessageID + " received again; nothing stored, the MDN answered again"
			if err := rc.deps.Store.NoteHistory(ctx, existing.MessageID, persistence.HistoryDuplicateReceived, reason, "as2:"+string(rc.name)); err != nil {
				rc.log.WarnContext(ctx, "note the duplicate in the message's history", "err", err)
			}
		}
		rc.respond(ctx, w, x, &existing, false)
		return
	}
	// Reserved: another request is storing it, or one was interrupted.
	if rc.now().Sub(existing.UpdatedAt) < rc.staleAfter {
		rc.busy(ctx, w, x, "the same message is being processed; send it again later")
		return
	}
	token := newToken()
	ok, err := takeOver(ctx, rc.deps.DB, existing.ID, existing.ClaimToken, token)
	if err != nil {
		rc.unavailable(ctx, w, x, "take over the AS2 message", err)
		return
	}
	if !ok {
		rc.busy(ctx, w, x, "the same message is being processed; send it again later")
		return
	}
	existing.ClaimToken = token
	if existing.DuplicateContent == contentRefused {
		rc.finishRepeat(ctx, w, x, &existing)
		return
	}
	rc.log.InfoContext(ctx, "AS2 message resent after an interrupted attempt; finishing it",
		"as2_message_id", existing.AS2MessageID, "as2_from", existing.AS2From)
	rc.take(ctx, w, x, &existing, true)
}

// sameContent reports whether a message carries what the row recorded, by the MIC over
// the same part with the row's algorithm.
func sameContent(row inboundRow, res *mime.Result) bool {
	if row.MIC == "" {
		return true
	}
	alg, err := cms.ParseDigestAlgorithm(row.MICAlgorithm)
	if err != nil {
		return false
	}
	return base64.StdEncoding.EncodeToString(res.MICWith(alg).Digest) == row.MIC
}
