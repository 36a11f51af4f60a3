package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"wharf/internal/persistence"
)

// The Sessions page lists the ordered sessions a failed delivery blocked, with the way
// out of each: resubmit the blocking delivery (attempt it again; the parked ones follow
// once it is delivered) or skip it (the parked ones are released at once). Both ask
// first, like the message actions, and act only on a confirmed POST.

var _ = registerPages([]string{"sessions"}, (*Server).sessionRoutes)

var _ = registerFlashes(map[string]flash{
	"session-resubmitted":     {Kind: "success", Text: "Resubmitted: the parked deliveries follow once it is delivered."},
	"session-skipped":         {Kind: "success", Text: "Skipped: the session's parked deliveries are released in order."},
	"session-action-refused":  {Kind: "danger", Text: "Refused: the delivery is not in a state that allows it (it may have changed meanwhile)."},
	"session-action-notfound": {Kind: "danger", Text: "That delivery does not exist."},
})

// SessionActions are the operator's recovery of blocked ordered sessions.
type SessionActions interface {
	ResubmitDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error)
	SkipDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error)
}

// sessionAction is one of the two recovery actions.
type sessionAction struct {
	name, button, flash string
	question            string // formatted with the delivery, message, target and parked count
	act                 func(SessionActions) func(context.Context, []int64, string) ([]persistence.DeliveryActionResult, error)
}

var sessionActions = map[string]sessionAction{
	"resubmit": {name: "resubmit", button: "Resubmit", flash: "session-resubmitted",
		question: "Attempt delivery %d (message %d to %s) again? The session stays blocked, its %d parked deliveries waiting, until it is delivered.",
		act: func(a SessionActions) func(context.Context, []int64, string) ([]persistence.DeliveryActionResult, error) {
			return a.ResubmitDeliveries
		}},
	"skip": {name: "skip", button: "Skip", flash: "session-skipped",
		question: "Skip delivery %d (message %d to %s)? It is not sent, and the session's %d parked deliveries are released in order.",
		act: func(a SessionActions) func(context.Context, []int64, string) ([]persistence.DeliveryActionResult, error) {
			return a.SkipDeliveries
		}},
}

func (s *Server) sessionRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/sessions", http.HandlerFunc(s.sessionsPage)},
		{"GET /ui/sessions/deliveries/{id}/{action}", http.HandlerFunc(s.confirmSessionAction)},
		{"POST /ui/sessions/deliveries/{id}/{action}", http.HandlerFunc(s.sessionActionPost)},
	}
}

// sessionRow is a blocked session as the page shows it.
type sessionRow struct {
	persistence.BlockedSession
	ParkedFor string // how long the oldest parked delivery waits
}

const sessionsPageSize = 100

func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request) {
	list, total, err := s.store.ListBlockedSessions(r.Context(), persistence.SessionFilter{
		ListOptions: persistence.ListOptions{Limit: sessionsPageSize}})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.now()
	rows := make([]sessionRow, len(list))
	for i, b := range list {
		rows[i] = sessionRow{BlockedSession: b}
		if b.OldestParkedAt != nil {
			rows[i].ParkedFor = now.Sub(*b.OldestParkedAt).Truncate(time.Second).String()
		}
	}
	s.render(w, r, http.StatusOK, "sessions", pageData{Title: "Sessions", Data: struct {
		Sessions  []sessionRow
		Total     int
		Actions   bool
		CSRFToken string
	}{rows, total, s.sessionActions() != nil, sessionCSRFToken(r)}})
}

// sessionActions returns the actions when the gateway offers them.
func (s *Server) sessionActions() SessionActions {
	a, _ := s.actions.(SessionActions)
	return a
}

// sessionTarget reads the delivery and action of a session action's URL.
func (s *Server) sessionTarget(w http.ResponseWriter, r *http.Request) (persistence.Delivery, sessionAction, bool) {
	act, ok := sessionActions[r.PathValue("action")]
	id, ok2 := messagePathID(r, "id")
	if !ok || !ok2 || s.sessionActions() == nil {
		s.notFound(w, r)
		return persistence.Delivery{}, act, false
	}
	d, err := s.store.GetDelivery(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return d, act, false
	}
	return d, act, true
}

func (s *Server) confirmSessionAction(w http.ResponseWriter, r *http.Request) {
	d, act, ok := s.sessionTarget(w, r)
	if !ok {
		return
	}
	m, err := s.store.GetMessage(r.Context(), d.MessageID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	parked := 0
	list, _, err := s.store.ListBlockedSessions(r.Context(), persistence.SessionFilter{Target: d.Target,
		ListOptions: persistence.ListOptions{Limit: 1000}})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, b := range list {
		if b.Key == d.SessionKey {
			parked = b.Parked
		}
	}
	s.renderConfirm(w, r, confirmData{Message: m,
		Heading:  fmt.Sprintf("%s delivery %d", act.button, d.ID),
		Question: fmt.Sprintf(act.question, d.ID, d.MessageID, d.Target, parked),
		Button:   act.button,
		Action:   fmt.Sprintf("/ui/sessions/deliveries/%d/%s", d.ID, act.name)})
}

func (s *Server) sessionActionPost(w http.ResponseWriter, r *http.Request) {
	d, act, ok := s.sessionTarget(w, r)
	if !ok {
		return
	}
	if !confirmed(r) {
		toConfirm(w, r)
		return
	}
	res, err := act.act(s.sessionActions())(r.Context(), []int64{d.ID}, messageActor(r))
	if err == nil {
		err = res[0].Err
	}
	switch {
	case errors.Is(err, persistence.ErrConflict):
		setFlash(w, "session-action-refused")
	case errors.Is(err, persistence.ErrNotFound):
		setFlash(w, "session-action-notfound")
	case err != nil:
		s.fail(w, r, err)
		return
	default:
		setFlash(w, act.flash)
	}
	http.Redirect(w, r, "/ui/sessions", http.StatusSeeOther)
}

// sessionPlace says how many unsettled deliveries of its session are ahead of dl.
func sessionPlace(dl persistence.Delivery) string {
	switch p := dl.SessionPosition; {
	case p == nil || dl.State.Final():
		return ""
	case *p == 0:
		return "next in its session"
	case *p == 1:
		return "1 ahead in its session"
	default:
		return fmt.Sprintf("%d ahead in its session", *p)
	}
}

// countParked adds the parked deliveries and the blocked sessions to the dashboard's
// problems.
func (s *Server) countParked(ctx context.Context, c *dashboardCounts) error {
	byState, err := s.store.CountDeliveriesByState(ctx)
	if err != nil {
		return err
	}
	c.Parked = byState[persistence.DeliveryParked]
	if _, c.BlockedSessions, err = s.store.ListBlockedSessions(ctx, persistence.SessionFilter{
		ListOptions: persistence.ListOptions{Limit: 1}}); err != nil {
		return err
	}
	if c.BlockedSessions > 0 {
		c.ProblemsNow += c.BlockedSessions
	}
	return nil
}
