package api

import (
	"encoding/json"
	"net/http"
	"time"
	"unicode/utf8"

	"wharf/internal/persistence"
)

// maxQueryLen bounds the q filter, in characters.
const maxQueryLen = 200

// parseMessageFilter reads the list's filters, each with its domain parser; a bad one is
// refused naming the parameter.
func parseMessageFilter(r *http.Request) (persistence.MessageFilter, page, error) {
	var f persistence.MessageFilter
	p, err := parsePage(r)
	if err != nil {
		return f, p, err
	}
	f.Limit, f.Offset = p.limit, p.offset
	q := r.URL.Query()
	for name := range q {
		switch name {
		case "status", "from", "to", "source", "since", "until", "q", "limit", "offset", "partner", "direction", "format":
		default:
			return f, p, invalid(name, "unknown parameter")
		}
		if len(q[name]) > 1 {
			return f, p, invalid(name, "given more than once")
		}
	}
	if v := q.Get("status"); v != "" {
		if f.Status, err = persistence.ParseMessageStatus(v); err != nil {
			return f, p, invalid("status", err.Error())
		}
	}
	if v := q.Get("from"); v != "" {
		if f.From, err = persistence.ParsePartyName(v); err != nil {
			return f, p, invalid("from", err.Error())
		}
	}
	if v := q.Get("to"); v != "" {
		if f.To, err = persistence.ParsePartyName(v); err != nil {
			return f, p, invalid("to", err.Error())
		}
	}
	if v := q.Get("partner"); v != "" {
		if f.Partner, err = persistence.ParsePartyName(v); err != nil {
			return f, p, invalid("partner", err.Error())
		}
	}
	if v := q.Get("direction"); v != "" {
		if f.Direction, err = persistence.ParseDirection(v); err != nil {
			return f, p, invalid("direction", err.Error())
		}
	}
	if v := q.Get("format"); v != "" && v != "json" && v != "csv" {
		return f, p, invalid("format", "must be json or csv")
	}
	if v := q.Get("source"); v != "" {
		if f.Source, err = persistence.ParseInstanceName(v); err != nil {
			return f, p, invalid("source", err.Error())
		}
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(t.name); v != "" {
			if *t.dst, err = time.Parse(time.RFC3339, v); err != nil {
				return f, p, invalid(t.name, "must be an RFC 3339 time such as 2026-01-31T12:00:00Z")
			}
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return f, p, invalid("until", "must be after since")
	}
	f.Q = q.Get("q")
	if !utf8.ValidString(f.Q) || utf8.RuneCountInString(f.Q) > maxQueryLen {
		return f, p, invalid("q", "must be UTF-8 text of at most 200 characters")
	}
	return f, p, nil
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) {
	f, p, err := parseMessageFilter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if wantsCSV(r) {
		s.exportMessages(w, r, f)
		return
	}
	msgs, total, err := s.store.ListMessages(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody("messages", msgs, total, p))
}

// messageDetail is a message with everything that happened to it.
type messageDetail struct {
	persistence.Message
	Deliveries []persistence.Delivery     `json:"deliveries"`
	History    []persistence.HistoryEntry `json:"history"`
	Payloads   []persistence.Payload      `json:"payloads"`
	// Protocols holds each protocol module's panel, keyed by module; empty until modules
	// contribute one.
	Protocols map[string]json.RawMessage `json:"protocols"`
}

func (s *Server) messageDetail(r *http.Request, id int64) (messageDetail, error) {
	ctx := r.Context()
	m, err := s.store.GetMessage(ctx, id)
	if err != nil {
		return messageDetail{}, err
	}
	d := messageDetail{Message: m, Protocols: map[string]json.RawMessage{}}
	if d.Deliveries, err = s.store.ListDeliveries(ctx, id); err != nil {
		return messageDetail{}, err
	}
	if d.History, err = s.store.ListHistory(ctx, id); err != nil {
		return messageDetail{}, err
	}
	persistence.AttachDownstream(d.Deliveries, d.History)
	if d.Payloads, err = s.store.ListPayloads(ctx, id); err != nil {
		return messageDetail{}, err
	}
	if d.Deliveries == nil {
		d.Deliveries = []persistence.Delivery{}
	}
	if d.History == nil {
		d.History = []persistence.HistoryEntry{}
	}
	if d.Payloads == nil {
		d.Payloads = []persistence.Payload{}
	}
	if d.Protocols, err = s.modulePanels(r, id); err != nil {
		return messageDetail{}, err
	}
	return d, nil
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.messageDetail(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}
