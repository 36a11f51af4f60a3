package ui

import (
	"context"
	"errors"
	"net/http"

	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

// A partner's pause in the web UI: its card on the partner's page (why, since when, how
// many deliveries wait, Resume; or a reason and Pause), the health badge of the partner
// list and the paused partners on the dashboard.

var _ = registerPages(nil, (*Server).partnerPauseRoutes)

var _ = registerFlashes(map[string]flash{
	"partner-paused":     {Kind: "success", Text: "Paused: deliveries to this partner wait until it is resumed."},
	"partner-resumed":    {Kind: "success", Text: "Resumed: the deliveries that waited are queued and sent again."},
	"partner-not-paused": {Kind: "info", Text: "Sending to this partner was not paused (someone resumed it already)."},
	"partner-was-paused": {Kind: "info", Text: "Sending to this partner was paused already; the reason shown stands."},
})

func (s *Server) partnerPauseRoutes() []pageRoute {
	return []pageRoute{
		{"POST " + partnerPages.Path + "/{name}/pause", http.HandlerFunc(s.pausePartnerPage)},
		{"POST " + partnerPages.Path + "/{name}/resume", http.HandlerFunc(s.resumePartnerPage)},
	}
}

// PartnerResumer resumes a paused partner and wakes the targets of the deliveries that
// waited; Actions that implement it are used, else the store resumes and the sweep's
// next wake-up finds the deliveries.
type PartnerResumer interface {
	ResumePartner(ctx context.Context, partner persistence.PartyName, actor string) ([]persistence.Delivery, error)
}

// pauseCard is the partner page's pause card: the pause while paused, else the form that
// pauses by hand with what was typed and why it was refused.
type pauseCard struct {
	Partner   persistence.PartyName
	Pause     *persistence.PartnerPause
	Reason    string
	Errors    map[string]string
	CSRFField string
	CSRFToken string
}

func (s *Server) pausePartnerPage(w http.ResponseWriter, r *http.Request) {
	party, ok := s.loadParty(w, r, partnerPages)
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	reason := r.PostForm.Get("reason")
	_, err := s.store.PausePartner(r.Context(), party.Name, reason, messageActor(r))
	switch {
	case errors.Is(err, persistence.ErrConflict):
		setFlash(w, "partner-was-paused")
	case errors.Is(err, persistence.ErrNotFound):
		s.notFound(w, r)
		return
	case err != nil:
		errs, ok := fieldMessages(err)
		if !ok {
			s.fail(w, r, err)
			return
		}
		s.renderPartyWith(w, r, http.StatusUnprocessableEntity, partnerPages, party, "", nil, &pauseCard{Reason: reason, Errors: errs})
		return
	default:
		setFlash(w, "partner-paused")
	}
	http.Redirect(w, r, partnerPages.Path+"/"+string(party.Name), http.StatusSeeOther)
}

func (s *Server) resumePartnerPage(w http.ResponseWriter, r *http.Request) {
	party, ok := s.loadParty(w, r, partnerPages)
	if !ok {
		return
	}
	resume := s.store.ResumePartner
	if rs, ok := s.actions.(PartnerResumer); ok {
		resume = rs.ResumePartner
	}
	_, err := resume(r.Context(), party.Name, messageActor(r))
	s.actionDone(w, r, err, partnerPages.Path+"/"+string(party.Name), persistence.ErrConflict, "partner-not-paused", "partner-resumed")
}

// pauseCardOf is the pause card of a partner page, from the partner's activity and, after
// a refused pause, the refused form.
func pauseCardOf(r *http.Request, a persistence.PartnerActivity, refused *pauseCard) *pauseCard {
	c := &pauseCard{}
	if refused != nil {
		c = refused
	}
	c.Partner, c.Pause = a.Partner, a.Pause
	c.CSRFField, c.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	return c
}

// pausedPartners reads the paused partners for the dashboard.
func (s *Server) pausedPartners(ctx context.Context, c *dashboardCounts) error {
	list, err := s.store.ListPartnerPauses(ctx)
	if err != nil {
		return err
	}
	c.Paused = list
	c.ProblemsNow += len(list)
	return nil
}
