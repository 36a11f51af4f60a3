package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/settings"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"party_retention"}, (*Server).partyRetentionRoutes)

var _ = registerFlashes(map[string]flash{
	"party-retention-updated": {Kind: "success", Text: "Saved. The pruning job applies it at its next run."},
})

// partyRetentionRoutes are the pages of a party's own retention.
func (s *Server) partyRetentionRoutes() []pageRoute {
	var out []pageRoute
	for _, p := range []partyPages{organizationPages, partnerPages} {
		out = append(out,
			pageRoute{"GET " + p.Path + "/{name}/retention", s.partyRetentionPage(p)},
			pageRoute{"POST " + p.Path + "/{name}/retention", s.updatePartyRetentionPage(p)},
		)
	}
	return out
}

// retentionForm is a party's retention as typed: empty keeps the global setting.
type retentionForm struct {
	Pages       partyPages
	Name        persistence.PartyName
	PayloadDays string
	HistoryDays string
	// GlobalPayload and GlobalHistory are the global settings an empty field keeps.
	GlobalPayload, GlobalHistory int
	Errors                       map[string]string
	CSRFField, CSRFToken         string
}

func daysText(d *int) string {
	if d == nil {
		return ""
	}
	return strconv.Itoa(*d)
}

func (s *Server) partyRetentionPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, ok := s.loadParty(w, r, p)
		if !ok {
			return
		}
		pr, err := s.store.GetPartyRetention(r.Context(), p.Kind, party.Name)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.renderRetentionForm(w, r, http.StatusOK, retentionForm{Pages: p, Name: party.Name,
			PayloadDays: daysText(pr.PayloadDays), HistoryDays: daysText(pr.HistoryDays)})
	})
}

func (s *Server) renderRetentionForm(w http.ResponseWriter, r *http.Request, status int, f retentionForm) {
	v, err := s.retentionSettings(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f.GlobalPayload, f.GlobalHistory = v.Retention.PayloadDays, v.Retention.HistoryDays
	f.CSRFField, f.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	s.render(w, r, status, "party_retention", pageData{Title: "Retention of " + string(f.Name), Data: f})
}

// parseRetentionForm reads both fields, naming every one that is not a number of days.
func parseRetentionForm(payload, history string) (persistence.PartyRetention, error) {
	var pr persistence.PartyRetention
	var es persistence.FieldErrors
	for _, f := range []struct {
		name, text string
		dst        **int
	}{{"payload_retention_days", payload, &pr.PayloadDays}, {"history_retention_days", history, &pr.HistoryDays}} {
		text := strings.TrimSpace(f.text)
		if text == "" {
			continue
		}
		n, err := strconv.Atoi(text)
		if err != nil {
			es.Add(f.name, persistence.RetentionDaysMessage+", or leave it empty for the global setting")
			continue
		}
		*f.dst = &n
	}
	es.Merge(pr.Check())
	return pr, es.Err()
}

func (s *Server) updatePartyRetentionPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, ok := s.loadParty(w, r, p)
		if !ok {
			return
		}
		if err := r.ParseForm(); err != nil {
			badForm(w, err)
			return
		}
		form := retentionForm{Pages: p, Name: party.Name,
			PayloadDays: r.PostForm.Get("payload_retention_days"), HistoryDays: r.PostForm.Get("history_retention_days")}
		pr, err := parseRetentionForm(form.PayloadDays, form.HistoryDays)
		if err == nil {
			pr.Kind, pr.Name = p.Kind, party.Name
			_, err = s.store.SetPartyRetention(r.Context(), pr)
		}
		if errors.Is(err, persistence.ErrNotFound) {
			s.notFound(w, r)
			return
		}
		if err != nil {
			errs, ok := fieldMessages(err)
			if !ok {
				s.fail(w, r, err)
				return
			}
			form.Errors = errs
			s.renderRetentionForm(w, r, http.StatusUnprocessableEntity, form)
			return
		}
		setFlash(w, "party-retention-updated")
		http.Redirect(w, r, p.Path+"/"+string(party.Name), http.StatusSeeOther)
	})
}

// retentionSettings reads the global retention settings (their defaults when unset).
func (s *Server) retentionSettings(ctx context.Context) (settings.Values, error) {
	m := map[string]string{}
	for _, key := range []string{settings.PayloadRetentionDays, settings.HistoryRetentionDays} {
		v, err := s.store.GetSetting(ctx, key)
		switch {
		case err == nil:
			m[key] = v
		case !errors.Is(err, persistence.ErrNotFound):
			return settings.Values{}, fmt.Errorf("read setting %s: %w", key, err)
		}
	}
	return settings.Parse(m)
}
