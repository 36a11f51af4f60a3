package api

import (
	"net/http"

	"wharf/internal/audit"
	"wharf/internal/records"
)

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	for name := range q {
		switch name {
		case "actor", "kind", "action", "record_id", "since", "until", "after_id", "limit", "offset":
		default:
			s.fail(w, r, invalid(name, "unknown parameter"))
			return
		}
	}
	f, err := records.ParseAuditFilter(q.Get)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f.Limit, f.Offset = p.limit, p.offset
	events, total, err := s.store.ListAudit(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if events == nil {
		events = []audit.Event{}
	}
	writeJSON(w, http.StatusOK, listBody("events", events, total, p))
}

// auditVerification is the answer of a verify request.
type auditVerification struct {
	OK       bool            `json:"ok"`
	Checked  int             `json:"checked"`
	Problems []audit.Problem `json:"problems"`
}

func (s *Server) verifyAudit(w http.ResponseWriter, r *http.Request) {
	n, problems, err := s.store.VerifyAudit(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if problems == nil {
		problems = []audit.Problem{}
	}
	writeJSON(w, http.StatusOK, auditVerification{OK: len(problems) == 0, Checked: n, Problems: problems})
}
