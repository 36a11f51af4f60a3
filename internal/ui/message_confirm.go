package ui

import (
	"context"
	"fmt"
	"net/http"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

// Redispatch and redeliver send a document again, so each asks first: the buttons on a
// message lead to a confirmation page (no script needed), and the actions act only on a
// POST that carries its confirmation.

var _ = registerPages([]string{"message_confirm"}, (*Server).messageConfirmRoutes)

func (s *Server) messageConfirmRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/messages/{id}/redispatch", http.HandlerFunc(s.confirmRedispatch)},
		{"GET /ui/messages/{id}/deliveries/{delivery_id}/redeliver", http.HandlerFunc(s.confirmRedeliver)},
	}
}

// confirmField is the form field an action's POST must carry with the value "yes".
const confirmField = "confirm"

func confirmed(r *http.Request) bool { return r.PostFormValue(confirmField) == "yes" }

type confirmData struct {
	Message                           persistence.Message
	Heading, Question, Button, Action string
	// Choice offers the resend modes (a delivered or failed delivery to a target whose
	// messages keep an identity).
	Choice    bool
	CSRFToken string
}

func (s *Server) renderConfirm(w http.ResponseWriter, r *http.Request, d confirmData) {
	if sess, ok := session.FromContext(r.Context()); ok {
		d.CSRFToken = sess.CSRFToken
	}
	s.render(w, r, http.StatusOK, "message_confirm", pageData{Title: d.Heading, Data: d})
}

// confirmedMessage reads the message a confirmation page is about; false when the page
// has been answered (not found, or a failure).
func (s *Server) confirmedMessage(w http.ResponseWriter, r *http.Request) (persistence.Message, bool) {
	id, ok := messagePathID(r, "id")
	if !ok || s.actions == nil {
		s.notFound(w, r)
		return persistence.Message{}, false
	}
	m, err := s.store.GetMessage(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return m, false
	}
	return m, true
}

func (s *Server) confirmRedispatch(w http.ResponseWriter, r *http.Request) {
	m, ok := s.confirmedMessage(w, r)
	if !ok {
		return
	}
	id := m.ID
	s.renderConfirm(w, r, confirmData{Message: m,
		Heading:  fmt.Sprintf("Redispatch message %d", id),
		Question: fmt.Sprintf("Match the routes of message %d (%s) again? Targets it has no delivery for get one, and its queued and stalled deliveries are sent again.", id, m.OriginalFileName),
		Button:   "Redispatch",
		Action:   fmt.Sprintf("/ui/messages/%d/redispatch", id)})
}

func (s *Server) confirmRedeliver(w http.ResponseWriter, r *http.Request) {
	did, ok := messagePathID(r, "delivery_id")
	if !ok {
		s.notFound(w, r)
		return
	}
	m, ok := s.confirmedMessage(w, r)
	if !ok {
		return
	}
	id := m.ID
	dl, err := s.store.GetDelivery(r.Context(), did)
	if err == nil && dl.MessageID != id {
		err = persistence.ErrNotFound
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderConfirm(w, r, confirmData{Message: m,
		Heading:  fmt.Sprintf("Redeliver message %d to %s", id, dl.Target),
		Question: fmt.Sprintf("Send message %d (%s) to %s again? The delivery is %s.", id, m.OriginalFileName, dl.Target, dl.State),
		Button:   "Redeliver",
		Action:   fmt.Sprintf("/ui/messages/%d/deliveries/%d/redeliver", id, did),
		Choice:   s.offersResendChoice(r.Context(), dl)})
}

// offersResendChoice reports whether redelivering dl can be sent under its earlier
// message id or as a new message: it reached an answered end at a target whose messages
// keep an identity.
func (s *Server) offersResendChoice(ctx context.Context, dl persistence.Delivery) bool {
	if dl.State != persistence.DeliveryDelivered && dl.State != persistence.DeliveryFailed {
		return false
	}
	cfg, err := s.store.GetPluginConfig(ctx, dl.Target)
	if err != nil {
		return false
	}
	p, ok := module.Lookup(cfg.Type)
	return ok && p.MessageIdentity
}

// toConfirm sends a POST that lacks its confirmation to the action's confirmation page.
func toConfirm(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, r.URL.Path, http.StatusSeeOther)
}

// resendMode reads the redeliver form's choice; anything but a known mode is refused.
func resendMode(r *http.Request) (persistence.ResendMode, error) {
	mode, err := persistence.ParseResendMode(r.PostFormValue("resend"))
	if err != nil {
		return "", fmt.Errorf("resend: %w", &persistence.FieldError{Field: "resend", Message: err.Error()})
	}
	return mode, nil
}
