package ui

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/ui/session"
)

type auditBundle struct {
	*pagesBundle
	path string // the SQLite file, for tampering with a row
}

// setupAudit serves the UI over an SQLite file of its own, signs alice in, and records a
// partner created and changed through the pages and a plugin change with a secret.
func setupAudit(t *testing.T) *auditBundle {
	t.Helper()
	b := newBundle(t)
	path := filepath.Join(t.TempDir(), "wharf.db")
	s, err := db.Open(context.Background(), db.Options{SQLitePath: path, AuditKey: dbtest.AuditKey,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b.store = s
	pb, _ := serveSignedIn(t, b, nil)
	if r := pb.post(t, "/ui/partners", url.Values{"name": {"acme"}, "display_name": {"Acme & Co"}}); r.status != http.StatusSeeOther {
		t.Fatalf("create partner = %d\n%s", r.status, r.body)
	}
	if r := pb.post(t, "/ui/partners/acme", url.Values{"display_name": {"Acme Trading"}}); r.status != http.StatusSeeOther {
		t.Fatalf("edit partner = %d\n%s", r.status, r.body)
	}
	ctx := audit.WithActor(context.Background(), "token:deploy")
	if err := s.RecordAudit(ctx, "update", "plugin_config", "ops", "ops", []audit.Change{
		{Path: "format", Old: json.RawMessage(`"generic"`), New: json.RawMessage(`"slack"`)},
		audit.SecretChange("url"),
	}); err != nil {
		t.Fatal(err)
	}
	return &auditBundle{pagesBundle: pb, path: path}
}

var auditRowRE = regexp.MustCompile(`<tr id="audit-event-(\d+)"`)

func auditIDs(body string) []int64 {
	var ids []int64
	for _, m := range auditRowRE.FindAllStringSubmatch(body, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		ids = append(ids, id)
	}
	return ids
}

func TestAuditPage(t *testing.T) {
	ab := setupAudit(t)
	body := ab.get(t, "/ui/audit", http.StatusOK)
	for _, want := range []string{
		`<td class="mono">user:alice</td>`, `<td class="mono">token:deploy</td>`,
		`<span class="audit-action">create</span><br><span class="audit-kind">partner</span>`,
		`<span class="audit-action">update</span><br><span class="audit-kind">plugin_config</span>`,
		`<span class="mono">display_name</span>: <span class="audit-value">&#34;Acme &amp; Co&#34;</span> → <span class="audit-value">&#34;Acme Trading&#34;</span>`,
		`<span class="mono">format</span>: <span class="audit-value">&#34;generic&#34;</span> → <span class="audit-value">&#34;slack&#34;</span>`,
		`<span class="mono">url</span>: <em>changed (secret)</em>`,
		`action="/ui/audit/verify"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	ids := auditIDs(body)
	if len(ids) < 3 {
		t.Fatalf("%d events listed, want at least 3", len(ids))
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] >= ids[i-1] {
			t.Fatalf("events not newest first: %v", ids)
		}
	}
	// Read-only for operators as well: the page has no form but the filters and Verify.
	if n := strings.Count(body, "<form"); n != 3 { // sign-out, verify, filters
		t.Errorf("%d forms on the page, want 3", n)
	}
}

func TestAuditPageFilters(t *testing.T) {
	ab := setupAudit(t)
	all := auditIDs(ab.get(t, "/ui/audit", http.StatusOK))
	for _, c := range []struct {
		query string
		want  func(body string) bool
		n     int // events wanted; -1 for "fewer than all"
	}{
		{"kind=partner", func(b string) bool {
			return strings.Contains(b, "Acme Trading") && !strings.Contains(b, "plugin_config")
		}, 2},
		{"kind=partner&action=update", func(b string) bool { return strings.Contains(b, "Acme Trading") }, 1},
		{"actor=token:deploy", func(b string) bool { return strings.Contains(b, "changed (secret)") }, 1},
		{"record_id=ops", func(b string) bool { return strings.Contains(b, "plugin_config") }, 1},
		{"since=2999-01-01T00:00:00Z", func(b string) bool { return strings.Contains(b, "No events match.") }, 0},
		{"until=2999-01-01T00:00:00Z", func(string) bool { return true }, len(all)},
	} {
		body := ab.get(t, "/ui/audit?"+c.query, http.StatusOK)
		if got := len(auditIDs(body)); got != c.n {
			t.Errorf("%s: %d events, want %d", c.query, got, c.n)
		}
		if !c.want(body) {
			t.Errorf("%s: wrong events", c.query)
		}
	}

	for _, c := range []struct{ query, field string }{
		{"since=yesterday", "since"},
		{"until=2026-13-01", "until"},
		{"actor=" + strings.Repeat("a", 201), "actor"},
		{"record_id=" + strings.Repeat("7", 201), "record"},
	} {
		body := ab.get(t, "/ui/audit?"+c.query, http.StatusBadRequest)
		if !strings.Contains(body, `id="filter-`+c.field+`-error"`) {
			t.Errorf("%s: no error by the %s field", c.query, c.field)
		}
		if len(auditIDs(body)) != 0 {
			t.Errorf("%s: events shown with a refused filter", c.query)
		}
	}
	body := ab.get(t, "/ui/audit?since=x&until=y", http.StatusBadRequest)
	if !strings.Contains(body, `id="filter-since-error"`) || !strings.Contains(body, `id="filter-until-error"`) {
		t.Error("not every refused field is named")
	}
	if !strings.Contains(body, `value="x"`) {
		t.Error("the refused form does not keep what was typed")
	}
}

func TestAuditPagePages(t *testing.T) {
	ab := setupAudit(t)
	ctx := audit.WithActor(context.Background(), "cli")
	for i := 0; i < auditPageSize; i++ {
		if err := ab.store.RecordAudit(ctx, "redeliver", "delivery", "9", "delivery 9", nil); err != nil {
			t.Fatal(err)
		}
	}
	_, total, err := ab.store.ListAudit(context.Background(), persistence.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	body := ab.get(t, "/ui/audit", http.StatusOK)
	if n := len(auditIDs(body)); n != auditPageSize || !strings.Contains(body, `href="/ui/audit?offset=50" rel="next"`) {
		t.Fatalf("first page: %d events, next link %v", n, strings.Contains(body, `rel="next"`))
	}
	body = ab.get(t, "/ui/audit?offset=50", http.StatusOK)
	if n := len(auditIDs(body)); n != total-auditPageSize || strings.Contains(body, `rel="next"`) || !strings.Contains(body, `rel="prev"`) {
		t.Errorf("second page: %d events, want %d, and only a previous link", n, total-auditPageSize)
	}
	ab.get(t, "/ui/audit?offset=x", http.StatusBadRequest)
}

func TestAuditVerify(t *testing.T) {
	ab := setupAudit(t)
	_, total, err := ab.store.ListAudit(context.Background(), persistence.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	r := ab.post(t, "/ui/audit/verify", nil)
	if r.status != http.StatusOK || !strings.Contains(r.body, "verified: "+strconv.Itoa(total)+" events") {
		t.Fatalf("verify = %d, want verified: %d events\n%s", r.status, total, r.body)
	}
	// An operator may view the log and verify it too.
	op, opCSRF, _ := ab.signedIn(t, "olga", persistence.RoleOperator)
	if r := op.get(t, "/ui/audit"); r.status != http.StatusOK || !strings.Contains(r.body, "Acme Trading") {
		t.Errorf("operator's audit page = %d", r.status)
	}
	if r := op.post(t, "/ui/audit/verify", url.Values{session.CSRFField: {opCSRF}}); r.status != http.StatusOK ||
		!strings.Contains(r.body, "verified: ") {
		t.Errorf("operator's verify = %d", r.status)
	}
	if r := ab.c.post(t, "/ui/audit/verify", url.Values{}); r.status != http.StatusForbidden {
		t.Errorf("verify without the CSRF token = %d, want 403", r.status)
	}

	// Change one row behind the store's back: the guard trigger goes first.
	events, _, err := ab.store.ListAudit(context.Background(), persistence.AuditFilter{Kind: "partner", Action: "create"})
	if err != nil || len(events) != 1 {
		t.Fatalf("partner create events = %v, %v", events, err)
	}
	id := events[0].ID
	raw, err := sql.Open("sqlite", ab.path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`DROP TRIGGER audit_events_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE audit_events SET record_name = 'acne' WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}

	r = ab.post(t, "/ui/audit/verify", nil)
	if r.status != http.StatusOK {
		t.Fatalf("verify = %d", r.status)
	}
	if strings.Contains(r.body, "verified: ") || !strings.Contains(r.body, "The audit log does not verify") {
		t.Errorf("verify after tampering does not report a problem\n%s", r.body)
	}
	if want := "<li>Event " + strconv.FormatInt(id, 10) + ": hash does not match"; !strings.Contains(r.body, want) {
		t.Errorf("verify does not name the event: want %q\n%s", want, r.body)
	}
}
