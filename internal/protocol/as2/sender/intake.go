package sender

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"wharf/internal/alert"
	"wharf/internal/logging"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
)

// ErrInvalidMDN is an async MDN that cannot be taken: unreadable, not verifiable with the
// partner's certificates, or unsigned where a signed one was requested. Nothing is
// recorded or settled, and the caller answers 4xx. The error also wraps the cms or mime
// failure class (cms.ErrAuthentication, mime.ErrMalformed, …) that says why.
var ErrInvalidMDN = errors.New("invalid MDN")

// SettleActor names the MDN intake in a delivery's history.
const SettleActor = "as2:mdn"

// Intake takes the asynchronous MDNs partners post for the messages the senders sent;
// the receiver's mdn_path hands them over.
type Intake struct {
	*core
}

// NewIntake returns the MDN intake; BaseURL and AsyncMDNURL of deps are not used.
func NewIntake(deps Deps) (*Intake, error) {
	c, err := newCore(deps)
	if err != nil {
		return nil, err
	}
	c.log = c.log.With("component", "as2-mdn-intake")
	return &Intake{core: c}, nil
}

// AcceptMDN takes an async MDN: contentType and body as posted, header for the partner's
// Message-ID and software. It finds what we sent by the MDN's Original-Message-ID,
// verifies the MDN with that partner's certificates and judges it like a sync one; an
// authentic MDN is kept as the message's receipt (unless it has one), recorded, and
// settles the delivery when the Message-ID is still the delivery's current one.
//
// Errors: an unknown Original-Message-ID wraps persistence.ErrNotFound, an MDN that
// cannot be taken wraps ErrInvalidMDN (both 4xx); anything else is ours (5xx, so the
// partner posts again).
func (in *Intake) AcceptMDN(ctx context.Context, contentType string, header http.Header, body []byte) error {
	id, err := peekOriginalMessageID(contentType, body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMDN, err)
	}
	// Our Message-IDs carry angle brackets; some products drop them when they echo one.
	id = "<" + strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(id), "<"), ">") + ">"
	rec, current, err := recordByMessageID(ctx, in.db, id)
	if err != nil {
		return fmt.Errorf("MDN for %s: %w", clip(id, 200), err)
	}
	ctx = logging.WithDeliveryID(logging.WithMessageID(ctx, rec.MessageID), rec.DeliveryID)
	out, err := in.dir.Outbound(ctx, rec.Organization, rec.Partner)
	if err != nil {
		return fmt.Errorf("MDN for %s: AS2 profiles of %s to %s: %w", rec.AS2MessageID, rec.Organization, rec.Partner, err)
	}
	v := judge(contentType, body, in.expectation(rec, out))
	if !v.Definitive {
		in.log.WarnContext(ctx, "async MDN refused", "as2_message_id", rec.AS2MessageID, "reason", v.Reason)
		mid := strconv.FormatInt(rec.MessageID, 10)
		in.alerts.Raise(alert.Alert{
			Code:    alert.AsyncMDNFailed,
			Subject: alert.Subject{Kind: "message", ID: mid},
			Summary: fmt.Sprintf("An asynchronous MDN from %s for message %s was refused: %s", rec.Partner, mid, v.Reason),
			Details: []alert.Detail{{Label: "Message", Value: mid}, {Label: "Partner", Value: rec.Partner},
				{Label: "AS2 Message-ID", Value: rec.AS2MessageID}, {Label: "Reason", Value: v.Reason}},
			DedupeKey: "async_mdn_failed:" + rec.AS2MessageID,
			Link:      "/ui/messages/" + mid,
		})
		return fmt.Errorf("%w: %s: %w", ErrInvalidMDN, v.Reason, v.Err)
	}
	if _, err := in.keepReceipt(ctx, rec, contentType, body); err != nil {
		return err
	}
	res := sendResult{Outcome: OutcomeDelivered, PartnerSoftware: header.Get("User-Agent")}
	if res.PartnerSoftware == "" {
		res.PartnerSoftware = header.Get("Server")
	}
	if !v.Accepted {
		res.Outcome, res.Reason = OutcomeFailed, v.Reason
	}
	m := mdnRecord(v, profile.MDNAsync, header.Get("Message-ID"), in.now())
	recorded, _, err := recordMDN(ctx, in.db, rec.ID, rec.MessageID, m, res, false)
	if err != nil {
		return err
	}
	accepted, reason, pause := v.Accepted, v.Reason, pauseFor(v.MDN.Disposition)
	if accepted {
		reason = v.Note
	}
	if !recorded && rec.MDN != nil {
		// A repeated MDN: the first one's verdict stands.
		accepted, reason, pause = rec.MDN.Verdict == VerdictAccepted, rec.Reason, ""
		if accepted {
			reason = rec.MDN.Note
		}
		in.log.InfoContext(ctx, "repeated async MDN; the first one stands", "as2_message_id", rec.AS2MessageID)
	}
	if !current {
		in.log.InfoContext(ctx, "async MDN for a Message-ID the delivery no longer uses; recorded, not settled",
			"as2_message_id", rec.AS2MessageID)
		return nil
	}
	if !recorded {
		// A repeated MDN settles nothing new and says nothing new downstream.
		d, err := in.store.SettleDelivery(ctx, rec.DeliveryID, accepted, reason, SettleActor)
		if errors.Is(err, persistence.ErrConflict) {
			in.log.WarnContext(ctx, "async MDN for a delivery that awaits no receipt", "as2_message_id", rec.AS2MessageID, "error", err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("settle delivery %d: %w", rec.DeliveryID, err)
		}
		in.log.InfoContext(ctx, "async MDN taken", "as2_message_id", rec.AS2MessageID, "accepted", accepted, "delivery_state", d.State)
		return nil
	}
	report := mdnDownstream(rec, v, header.Get("Date"))
	report.Pause = pause
	d, err := in.store.SettleReceipt(ctx, report)
	if err != nil {
		return fmt.Errorf("settle delivery %d: %w", rec.DeliveryID, err)
	}
	in.log.InfoContext(ctx, "async MDN taken", "as2_message_id", rec.AS2MessageID, "accepted", accepted, "delivery_state", d.State)
	return nil
}
