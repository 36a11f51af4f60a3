package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"wharf/internal/persistence"
)

// PartnerResumer resumes a paused partner and wakes the targets of the deliveries that
// were waiting. Without it (an Ops that lacks it) the store resumes and the sweep's next
// wake-up finds the deliveries.
type PartnerResumer interface {
	ResumePartner(ctx context.Context, partner persistence.PartyName, actor string) ([]persistence.Delivery, error)
}

// pauseView is a partner's pause state: paused or not, and while paused why, by whom,
// since when and how many deliveries wait.
type pauseView struct {
	Partner    persistence.PartyName `json:"partner"`
	Paused     bool                  `json:"paused"`
	Reason     string                `json:"reason,omitempty"`
	Actor      string                `json:"actor,omitempty"`
	PausedAt   *time.Time            `json:"paused_at,omitempty"`
	DeliveryID int64                 `json:"delivery_id,omitempty"`
	MessageID  int64                 `json:"message_id,omitempty"`
	Waiting    int                   `json:"waiting"`
}

func viewPause(p persistence.PartnerPause) pauseView {
	at := p.PausedAt
	return pauseView{Partner: p.Partner, Paused: true, Reason: p.Reason, Actor: p.Actor, PausedAt: &at,
		DeliveryID: p.DeliveryID, MessageID: p.MessageID, Waiting: p.Waiting}
}

// getPartnerPause answers GET /api/v1/partners/{name}/pause.
func (s *Server) getPartnerPause(w http.ResponseWriter, r *http.Request) {
	name, err := pathPartyName(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.store.GetParty(r.Context(), persistence.PartyPartner, name); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.store.GetPartnerPause(r.Context(), name)
	if errors.Is(err, persistence.ErrNotFound) {
		writeJSON(w, http.StatusOK, pauseView{Partner: name})
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewPause(p))
}

// pauseInput is the body of a pause by hand.
type pauseInput struct {
	Reason string `json:"reason"`
}

// pausePartner answers POST /api/v1/partners/{name}/pause: sending to the partner stops
// until it is resumed; a partner paused already is 409 PARTNER_PAUSED.
func (s *Server) pausePartner(w http.ResponseWriter, r *http.Request) {
	name, err := pathPartyName(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var in pauseInput
	if err := decodeJSON(r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := s.store.PausePartner(r.Context(), name, in.Reason, actor(r))
	if err != nil {
		s.fail(w, r, withCode(err, persistence.ErrConflict, "PARTNER_PAUSED"))
		return
	}
	writeJSON(w, http.StatusOK, viewPause(p))
}

// resumeResult is what a resumption did.
type resumeResult struct {
	Partner persistence.PartyName `json:"partner"`
	Paused  bool                  `json:"paused"`
	// Resumed counts the deliveries queued again.
	Resumed int `json:"resumed"`
}

// resumePartner answers POST /api/v1/partners/{name}/resume: the pause ends and the
// deliveries that waited are queued, due now; a partner not paused is 409
// PARTNER_NOT_PAUSED.
func (s *Server) resumePartner(w http.ResponseWriter, r *http.Request) {
	name, err := pathPartyName(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var resume func(context.Context, persistence.PartyName, string) ([]persistence.Delivery, error) = s.store.ResumePartner
	if rs, ok := s.ops.(PartnerResumer); ok {
		resume = rs.ResumePartner
	}
	ds, err := resume(r.Context(), name, actor(r))
	if err != nil {
		s.fail(w, r, withCode(err, persistence.ErrConflict, "PARTNER_NOT_PAUSED"))
		return
	}
	writeJSON(w, http.StatusOK, resumeResult{Partner: name, Resumed: len(ds)})
}
