package api

import (
	"net/http"
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

// listHistory lists history lines of a time range, which it requires: an unbounded read
// of the history would touch every partition.
func (s *Server) listHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var from, to time.Time
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"from", &from}, {"to", &to}} {
		v := q.Get(t.name)
		if v == "" {
			s.fail(w, r, invalid(t.name, "is required: history is listed by time range (RFC 3339, at most 31 days)"))
			return
		}
		var err error
		if *t.dst, err = time.Parse(time.RFC3339, v); err != nil {
			s.fail(w, r, invalid(t.name, "must be an RFC 3339 time such as 2026-01-31T12:00:00Z"))
			return
		}
	}
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.fail(w, r, invalid("after", "must be a history line id (a whole number from 0)"))
			return
		}
		after = n
	}
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	lines, err := s.store.ListHistoryRange(r.Context(), from, to, after, p.limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if lines == nil {
		lines = []persistence.HistoryEntry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"history": lines, "limit": p.limit})
}
