package ui

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"wharf/internal/certs/certstest"
	"wharf/internal/records"
)

func TestServicesPageActions(t *testing.T) {
	cb := setupConfigPages(t)
	cb.seedRouting(t)
	cb.svc.failStart = "archive"

	page := cb.get(t, "/ui/services", http.StatusOK)
	for _, want := range []string{`hx-get="/ui/services/table"`, `hx-trigger="every 3s"`, `href="/ui/plugins/file-poller/outbox"`,
		`action="/ui/services/file-writer/inbox/start"`, `data-state="stopped"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q\n%s", want, page)
		}
	}

	wantRedirect(t, cb.post(t, "/ui/services/file-writer/inbox/start", nil), "/ui/services")
	page = cb.get(t, "/ui/services", http.StatusOK)
	if !strings.Contains(page, "Started.") || !strings.Contains(page, `action="/ui/services/file-writer/inbox/stop"`) {
		t.Errorf("after start:\n%s", page)
	}
	// The polled table follows the state without the layout around it.
	table := cb.get(t, "/ui/services/table", http.StatusOK)
	if strings.Contains(table, "<html") || !strings.Contains(table, `id="services-table"`) {
		t.Errorf("fragment:\n%s", table)
	}
	inbox := table[strings.Index(table, "file-writer/inbox"):]
	if !strings.Contains(inbox[:strings.Index(inbox, "</tr>")], `data-state="running"`) {
		t.Errorf("inbox is not running in the table:\n%s", table)
	}

	wantRedirect(t, cb.post(t, "/ui/services/file-writer/inbox/restart", nil), "/ui/services")
	wantRedirect(t, cb.post(t, "/ui/services/file-writer/inbox/stop", nil), "/ui/services")
	if page := cb.get(t, "/ui/services", http.StatusOK); !strings.Contains(page, "Stopped.") {
		t.Errorf("after stop:\n%s", page)
	}

	// A failed start is a flash and the failed state with its reason, not a 500.
	wantRedirect(t, cb.post(t, "/ui/services/file-writer/archive/start", nil), "/ui/services")
	page = cb.get(t, "/ui/services", http.StatusOK)
	for _, want := range []string{"The action failed", `data-state="failed"`, "address already in use"} {
		if !strings.Contains(page, want) {
			t.Errorf("after a failed start, page lacks %q\n%s", want, page)
		}
	}

	want := []string{"start inbox", "restart inbox", "stop inbox", "start archive"}
	if got := cb.svc.callLog(); !slices.Equal(got, want) {
		t.Errorf("actions = %v, want %v", got, want)
	}
}

func TestServicesNotFoundAndCSRF(t *testing.T) {
	cb := setupConfigPages(t)
	cb.seedRouting(t)
	for _, path := range []string{"/ui/services/file-writer/missing/start", "/ui/services/no-such-type/inbox/stop",
		"/ui/services/file-poller/inbox/restart", "/ui/services/file-writer/inbox/explode"} {
		if r := cb.post(t, path, nil); r.status != http.StatusNotFound {
			t.Errorf("POST %s = %d, want 404", path, r.status)
		}
	}
	if r := cb.c.post(t, "/ui/services/file-writer/inbox/start", url.Values{}); r.status != http.StatusForbidden {
		t.Errorf("start without CSRF token = %d, want 403", r.status)
	}
	if got := cb.svc.callLog(); len(got) != 0 {
		t.Errorf("actions taken: %v", got)
	}
}

func TestServicesPageWithoutServices(t *testing.T) {
	pb := setupPages(t)
	if body := pb.get(t, "/ui/services", http.StatusOK); !strings.Contains(body, "Services are not run by this process.") {
		t.Errorf("page:\n%s", body)
	}
}

var hrefRE = regexp.MustCompile(`href="(/ui/[^"#?]*)"`)

// TestConfigPagesLinksServed follows every link the certificate, plugin and services pages
// show within those pages and requires each to be served.
func TestConfigPagesLinksServed(t *testing.T) {
	cb := setupConfigPages(t)
	cb.seedRouting(t)
	ca := certstest.CA(t, "Test CA")
	wantRedirect(t, cb.upload(t, "/ui/certificates", nil, certstest.CertsPEM(certstest.ValidLeaf(t, ca, "a.example", certstest.ECKey(t)).Cert), true), "/ui/certificates/1")
	if err := cb.store.SetCertificateUses(context.Background(), records.PluginCertificateUse, "inbox", []int64{1}); err != nil {
		t.Fatal(err)
	}
	mine := func(p string) bool {
		for _, prefix := range []string{"/ui/certificates", "/ui/plugins", "/ui/services"} {
			if p == prefix || strings.HasPrefix(p, prefix+"/") {
				return true
			}
		}
		return false
	}
	queue := []string{"/ui/certificates", "/ui/plugins", "/ui/services"}
	seen := map[string]bool{}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		body := cb.get(t, p, http.StatusOK)
		for _, m := range hrefRE.FindAllStringSubmatch(body, -1) {
			if mine(m[1]) && !seen[m[1]] {
				queue = append(queue, m[1])
			}
		}
	}
	for _, want := range []string{"/ui/certificates/new", "/ui/certificates/1", "/ui/plugins/file-writer/inbox/edit",
		"/ui/plugins/http-poster/new"} {
		if !seen[want] {
			t.Errorf("the crawl did not reach %s", want)
		}
	}
	if len(seen) < 15 {
		t.Errorf("crawled only %d pages: %v", len(seen), seen)
	}
}
