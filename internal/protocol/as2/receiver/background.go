package receiver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"wharf/internal/logging"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// background sends queued asynchronous MDNs and finishes reservations a crash left
// behind, at every tick and whenever a new MDN is queued, until Stop.
func (rc *Receiver) background(ctx context.Context) {
	t := time.NewTicker(rc.tick)
	defer t.Stop()
	var streamsCleaned time.Time
	for {
		rc.reconcile(ctx)
		rc.sendDue(ctx)
		if now := rc.now(); now.Sub(streamsCleaned) >= streamCleanEvery {
			streamsCleaned = now
			rc.removeStaleStreams(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-rc.wake:
		}
	}
}

// reconcile finishes reservations untouched for longer than any request may take: the
// request that made them was interrupted (a crash, a lost database connection). A
// message that was stored gets the MDN stored with it (written now and kept when there
// is none) recorded and, when asynchronous, queued; a message that was not is
// forgotten, so the partner's resend is taken afresh.
func (rc *Receiver) reconcile(ctx context.Context) {
	rows, err := staleReservations(ctx, rc.deps.DB, rc.name, rc.now().Add(-rc.staleAfter), 50)
	if err != nil {
		if ctx.Err() == nil {
			rc.log.Error("list interrupted AS2 messages", "err", err)
		}
		return
	}
	for _, row := range rows {
		if ctx.Err() != nil {
			return
		}
		token := newToken()
		ok, err := takeOver(ctx, rc.deps.DB, row.ID, row.ClaimToken, token)
		if err != nil || !ok {
			continue
		}
		row.ClaimToken = token
		rc.finishInterrupted(ctx, row)
	}
}

func (rc *Receiver) finishInterrupted(ctx context.Context, row inboundRow) {
	log := rc.log.With("as2_message_id", row.AS2MessageID, "as2_from", row.AS2From)
	msg, err := rc.findStored(ctx, &row)
	if errors.Is(err, persistence.ErrNotFound) {
		if err := release(ctx, rc.deps.DB, row); err != nil {
			log.Error("forget interrupted AS2 message", "err", err)
			return
		}
		log.Warn("interrupted AS2 message was not stored; forgotten, so a resend is taken again")
		return
	}
	if err != nil {
		log.Error("look up interrupted AS2 message", "err", err)
		return
	}
	ctx = logging.WithMessage(ctx, msg.ID, msg.CorrelationID)
	row.MessageID = msg.ID
	signer := func(ctx context.Context) (*mime.Signer, error) {
		in, err := rc.deps.Directory.Inbound(ctx, profile.AS2ID(row.AS2From), profile.AS2ID(row.AS2To))
		if err != nil {
			return nil, fmt.Errorf("resolve AS2 profiles for the MDN: %w", err)
		}
		return in.Signer, nil
	}
	if err := rc.completeStored(ctx, &row, signer); err != nil {
		log.ErrorContext(ctx, "finish interrupted AS2 message", "err", err)
		return
	}
	log.InfoContext(ctx, "interrupted AS2 message finished", "mdn", string(row.MDNMode))
}

// streamCleanEvery is how often the streamed uploads a crash left behind are looked for.
const streamCleanEvery = time.Hour

// staleStreamer removes streamed uploads never finished (storage.Stores).
type staleStreamer interface {
	RemoveStaleStreams(ctx context.Context, cutoff time.Time) error
}

// removeStaleStreams aborts the uploads of request bodies and documents that followed
// their files to S3 and were never stored nor aborted, because the process receiving
// them ended. A request lasts at most the write timeout, so older ones have no owner.
func (rc *Receiver) removeStaleStreams(ctx context.Context) {
	s, ok := rc.deps.Blobs.(staleStreamer)
	if !ok {
		return
	}
	cutoff := rc.now().Add(-2 * time.Duration(rc.cfg.WriteTimeout))
	if err := s.RemoveStaleStreams(ctx, cutoff); err != nil && ctx.Err() == nil {
		rc.log.Warn("remove streamed uploads left by a crash", "err", err)
	}
}
