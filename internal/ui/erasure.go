package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

// Erasure removes documents for good, so it is an administrator's action and always
// asks first: a message's "Erase…" button leads to a confirmation page, and the erasure
// page counts the messages of a party and range before a second submit erases them.

var _ = registerPages([]string{"erasure"}, (*Server).erasureRoutes)

var _ = registerFlashes(map[string]flash{
	"message-erased": {Kind: "success", Text: "The message's content is erased: its payloads, file name and metadata are gone."},
	"message-erase-refused": {Kind: "danger", Text: "Erasure refused: the message is erased already, or deliveries of it are still under way " +
		"(erase it once each is delivered, failed or skipped)."},
})

// Erasure erases messages' content (erasure.Service).
type Erasure interface {
	Count(ctx context.Context, f persistence.ErasureFilter) (persistence.ErasureCount, error)
	Erase(ctx context.Context, f persistence.ErasureFilter, actor string) (persistence.ErasureResult, error)
	EraseMessage(ctx context.Context, id int64, actor string) (persistence.ErasureResult, error)
}

func (s *Server) erasureRoutes() []pageRoute {
	admin := func(h http.HandlerFunc) http.Handler { return s.adminOnly(h) }
	return []pageRoute{
		{"GET /ui/erasures", admin(s.erasurePage)},
		{"POST /ui/erasures", admin(s.erasePage)},
		{"GET /ui/messages/{id}/erase", admin(s.confirmEraseMessage)},
		{"POST /ui/messages/{id}/erase", admin(s.eraseMessage)},
	}
}

// erasureDay is how the form's days are written (an input of type date), read in UTC.
const erasureDay = "2006-01-02"

// erasureData is the erasure page in one of its steps: the form (with errors), the
// confirmation naming how many, or what the erasure did.
type erasureData struct {
	Party, From, To string
	Parties         []persistence.Party
	Errors          map[string]string
	Count           *persistence.ErasureCount
	Result          *persistence.ErasureResult
	CSRFToken       string
}

func (s *Server) renderErasure(w http.ResponseWriter, r *http.Request, status int, d erasureData) {
	if sess, ok := session.FromContext(r.Context()); ok {
		d.CSRFToken = sess.CSRFToken
	}
	parties, err := s.erasureParties(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Parties = parties
	s.render(w, r, status, "erasure", pageData{Title: "Erasure", Data: d})
}

// erasureParties lists every organization and partner for the form's choice.
func (s *Server) erasureParties(ctx context.Context) ([]persistence.Party, error) {
	var out []persistence.Party
	for _, kind := range []persistence.PartyKind{persistence.PartyPartner, persistence.PartyOrganization} {
		ps, _, err := s.store.ListParties(ctx, kind, persistence.ListOptions{Limit: 1000})
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

func (s *Server) erasurePage(w http.ResponseWriter, r *http.Request) {
	if s.erasure == nil {
		http.Error(w, "erasure is not available", http.StatusServiceUnavailable)
		return
	}
	s.renderErasure(w, r, http.StatusOK, erasureData{})
}

// erasureForm reads the form into a filter; the days are UTC and the last one is
// included. Every wrong field is named at once.
func erasureForm(r *http.Request) (erasureData, persistence.ErasureFilter) {
	d := erasureData{Party: strings.TrimSpace(r.PostFormValue("party")), From: strings.TrimSpace(r.PostFormValue("from")),
		To: strings.TrimSpace(r.PostFormValue("to")), Errors: map[string]string{}}
	var f persistence.ErasureFilter
	var err error
	if f.Party, err = persistence.ParsePartyName(d.Party); err != nil {
		d.Errors["party"] = "Choose the party whose messages are erased."
	}
	if f.From, err = time.Parse(erasureDay, d.From); err != nil {
		d.Errors["from"] = "Pick the first day, such as 2026-01-31."
	}
	if day, err := time.Parse(erasureDay, d.To); err != nil {
		d.Errors["to"] = "Pick the last day, such as 2026-01-31."
	} else {
		f.To = day.AddDate(0, 0, 1)
	}
	if d.Errors["from"] == "" && d.Errors["to"] == "" && !f.To.After(f.From) {
		d.Errors["to"] = "The last day is the first day or later."
	}
	return d, f
}

// erasePage counts the messages the form selects and asks for a confirmation naming how
// many; the confirmed form erases them and shows what was done.
func (s *Server) erasePage(w http.ResponseWriter, r *http.Request) {
	if s.erasure == nil {
		http.Error(w, "erasure is not available", http.StatusServiceUnavailable)
		return
	}
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	d, f := erasureForm(r)
	if len(d.Errors) > 0 {
		s.renderErasure(w, r, http.StatusUnprocessableEntity, d)
		return
	}
	if !confirmed(r) {
		c, err := s.erasure.Count(r.Context(), f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		d.Count = &c
		s.renderErasure(w, r, http.StatusOK, d)
		return
	}
	res, err := s.erasure.Erase(r.Context(), f, messageActor(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "messages erased", "party", f.Party, "erased", res.Erased, "by", currentUser(r).Name)
	d.Result = &res
	s.renderErasure(w, r, http.StatusOK, d)
}

func (s *Server) confirmEraseMessage(w http.ResponseWriter, r *http.Request) {
	if s.erasure == nil {
		s.notFound(w, r)
		return
	}
	id, ok := messagePathID(r, "id")
	if !ok {
		s.notFound(w, r)
		return
	}
	m, err := s.store.GetMessage(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderConfirm(w, r, confirmData{Message: m,
		Heading: fmt.Sprintf("Erase message %d", id),
		Question: fmt.Sprintf("Erase the content of message %d (%s) from %s to %s? Its payloads are deleted and its file name and metadata cleared; "+
			"it stays counted, with its parties, size and status. This cannot be undone.", id, m.OriginalFileName, m.From, m.To),
		Button: "Erase",
		Action: fmt.Sprintf("/ui/messages/%d/erase", id)})
}

// eraseMessage erases one message once confirmed.
func (s *Server) eraseMessage(w http.ResponseWriter, r *http.Request) {
	s.confirmedAction(w, r, s.erasure != nil, func(ctx context.Context, id int64) error {
		_, err := s.erasure.EraseMessage(ctx, id, messageActor(r))
		return err
	}, "message-erased", "message-erase-refused")
}
