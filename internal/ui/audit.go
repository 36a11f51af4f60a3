package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"audit"}, (*Server).auditRoutes)

// auditPageSize is the number of events on one page of the audit log.
const auditPageSize = 50

// auditRoutes are the audit log and its Verify button; administrators and operators both
// see them, and nothing on them changes a record.
func (s *Server) auditRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/audit", http.HandlerFunc(s.auditPage)},
		{"POST /ui/audit/verify", http.HandlerFunc(s.auditVerify)},
	}
}

// auditFilterForm is the log's filter form as typed, and why a field was refused.
type auditFilterForm struct {
	Actor, Kind, Action, RecordID, Since, Until string
	Offset                                      int
	Errors                                      map[string]string
}

// parseAuditFilter reads the filters with records.ParseAuditFilter, the REST list's rule
// set; only the form's fields are read.
func parseAuditFilter(q url.Values) (auditFilterForm, persistence.AuditFilter) {
	form := auditFilterForm{Actor: q.Get("actor"), Kind: q.Get("kind"), Action: q.Get("action"),
		RecordID: q.Get("record_id"), Since: q.Get("since"), Until: q.Get("until")}
	f, err := records.ParseAuditFilter(func(name string) string {
		if !slices.Contains(records.AuditFilterFields, name) {
			return ""
		}
		return q.Get(name)
	})
	form.Errors = fieldErrors(err)
	form.Offset = pageOffset(q, form.Errors)
	f.Limit, f.Offset = auditPageSize, form.Offset
	return form, f
}

// url is the log page with these filters at offset.
func (form auditFilterForm) url(offset int) string {
	v := url.Values{}
	for _, p := range []struct{ name, value string }{{"actor", form.Actor}, {"kind", form.Kind},
		{"action", form.Action}, {"record_id", form.RecordID}, {"since", form.Since}, {"until", form.Until}} {
		if p.value != "" {
			v.Set(p.name, p.value)
		}
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	if len(v) == 0 {
		return "/ui/audit"
	}
	return "/ui/audit?" + v.Encode()
}

// auditChange is one field of an event as the page shows it; a secret change has no
// values.
type auditChange struct {
	Path     string
	Old, New string // compact JSON; empty when the field was absent
	Secret   bool
}

type auditRow struct {
	audit.Event
	Rows []auditChange
}

// auditVerification is what the Verify button found.
type auditVerification struct {
	Checked  int
	Problems []audit.Problem
}

type auditData struct {
	Filter auditFilterForm
	Events []auditRow
	Pager
	Verify    *auditVerification
	CSRFField string
	CSRFToken string
}

// auditPage lists audit events newest first. Refused filters answer 400 with the form and
// its errors and no events.
func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) {
	s.renderAudit(w, r, r.URL.Query(), nil)
}

// auditVerify checks the hash chain of the whole log and shows the outcome above the
// first page of the log.
func (s *Server) auditVerify(w http.ResponseWriter, r *http.Request) {
	n, problems, err := s.store.VerifyAudit(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderAudit(w, r, url.Values{}, &auditVerification{Checked: n, Problems: problems})
}

func (s *Server) renderAudit(w http.ResponseWriter, r *http.Request, q url.Values, v *auditVerification) {
	form, f := parseAuditFilter(q)
	d := auditData{Filter: form, Verify: v, CSRFField: session.CSRFField, CSRFToken: sessionCSRFToken(r)}
	s.renderList(w, r, "audit", "Audit log", &d, len(form.Errors) > 0, func() error { return s.listAudit(r.Context(), &d, f) })
}

func (s *Server) listAudit(ctx context.Context, d *auditData, f persistence.AuditFilter) error {
	form := d.Filter
	events, total, err := s.store.ListAudit(ctx, f)
	if err != nil {
		return err
	}
	for _, e := range events {
		row := auditRow{Event: e}
		for _, c := range e.Changes {
			ac := auditChange{Path: c.Path, Secret: c.Secret}
			if !c.Secret {
				ac.Old, ac.New = displayJSON(c.Old), displayJSON(c.New)
			}
			row.Rows = append(row.Rows, ac)
		}
		d.Events = append(d.Events, row)
	}
	d.Pager = newPager(form.Offset, len(events), total, auditPageSize, form.url)
	return nil
}

// displayJSON is a stored value as JSON for people: the store's encoding escapes <, > and
// & as \u003c and the like, which the page's own escaping makes unnecessary.
func displayJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
