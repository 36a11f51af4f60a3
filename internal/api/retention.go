package api

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"wharf/internal/persistence"
)

// retentionBody is a party's own retention: null days keep the global setting.
type retentionBody struct {
	PayloadDays *int `json:"payload_retention_days"`
	HistoryDays *int `json:"history_retention_days"`
}

func (s *Server) getPartyRetention(res partyResource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, err := pathPartyName(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		pr, err := s.store.GetPartyRetention(r.Context(), res.kind, name)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, retentionBody{pr.PayloadDays, pr.HistoryDays})
	}
}

func (s *Server) putPartyRetention(res partyResource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, err := pathPartyName(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var in retentionBody
		if err := decodeJSON(r, &in); err != nil {
			s.fail(w, r, err)
			return
		}
		pr, err := s.store.SetPartyRetention(r.Context(), persistence.PartyRetention{
			Kind: res.kind, Name: name, PayloadDays: in.PayloadDays, HistoryDays: in.HistoryDays})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, retentionBody{pr.PayloadDays, pr.HistoryDays})
	}
}

// historyQuery is a read of the history: a time range, which it requires (an unbounded
// read would touch every partition), and the id to go on after.
type historyQuery struct {
	from, to time.Time
	after    int64
}

// parseHistoryQuery reads from, to and after, naming the parameter that is wrong.
func parseHistoryQuery(q url.Values) (historyQuery, error) {
	var h historyQuery
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"from", &h.from}, {"to", &h.to}} {
		v := q.Get(t.name)
		if v == "" {
			return h, invalid(t.name, "is required: history is listed by time range (RFC 3339, at most 31 days)")
		}
		var err error
		if *t.dst, err = time.Parse(time.RFC3339, v); err != nil {
			return h, invalid(t.name, "must be an RFC 3339 time such as 2026-01-31T12:00:00Z")
		}
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return h, invalid("after", "must be a history line id (a whole number from 0)")
		}
		h.after = n
	}
	return h, nil
}

// listHistory lists the history lines of a time range in id order.
func (s *Server) listHistory(w http.ResponseWriter, r *http.Request) {
	h, err := parseHistoryQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	lines, err := s.store.ListHistoryRange(r.Context(), h.from, h.to, h.after, p.limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if lines == nil {
		lines = []persistence.HistoryEntry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"history": lines, "limit": p.limit})
}
