package browsertest

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// populate gives the gateway a record of each kind the pages show: an organization, a
// partner with an AS2 profile, a route and a delivered message. It returns the message id.
func populate(t *testing.T, h *harness, c *client) int64 {
	t.Helper()
	if r := c.post(t, "/ui/organizations", url.Values{"name": {"acme"}, "display_name": {"Acme & Co"}}); r.status != http.StatusSeeOther {
		t.Fatalf("create organization = %d", r.status)
	}
	if r := c.post(t, "/ui/partners", url.Values{"name": {"b"}, "display_name": {"Partner B"}}); r.status != http.StatusSeeOther {
		t.Fatalf("create partner = %d", r.status)
	}
	if r := c.post(t, "/ui/partners/b/panels/as2", remoteForm("https://partner.example/as2")); r.status != http.StatusSeeOther {
		t.Fatalf("create AS2 profile = %d\n%s", r.status, r.body)
	}
	if r := c.post(t, "/ui/routes", url.Values{"source": {"file_poller_default"}, "from": {"acme"}, "to": {"b"},
		"target": {"file_writer_default"}}); r.status != http.StatusSeeOther {
		t.Fatalf("create route = %d\n%s", r.status, r.body)
	}
	id := h.sendMessage("acme", "b", "file_writer_default", "order-1.xml", "<order>1</order>")
	h.waitStatus(id, "delivered")
	return id
}

// waitStatus polls the message through REST until it has the status.
func (h *harness) waitStatus(id int64, want string) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var m struct {
			Status string `json:"status"`
		}
		h.mustJSON("GET", fmt.Sprintf("/api/v1/messages/%d", id), nil, &m)
		if m.Status == want {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("message %d is %s, not %s, after 30 s", id, m.Status, want)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for work
	}
}

var linkRE = regexp.MustCompile(`\s(?:href|src)="([^"]*)"`)

// crawl follows every same-origin href and src the pages show, from /ui/, with GET only.
// Every link must answer 200, or redirect to a page that does. It returns the paths it
// visited.
func crawl(t *testing.T, c *client) []string {
	t.Helper()
	base, _ := url.Parse(c.h.base)
	seen := map[string]bool{"/ui/": true}
	queue := []string{"/ui/"}
	var visited []string
	for len(queue) > 0 {
		if len(visited) > 2000 {
			t.Fatalf("the crawl found more than 2000 links; a page makes links without end?")
		}
		path := queue[0]
		queue = queue[1:]
		visited = append(visited, path)
		r, final := c.follow(t, path)
		switch {
		case r.status != http.StatusOK:
			t.Errorf("GET %s (shown by a page) = %d at %s", path, r.status, final)
			continue
		case !strings.HasPrefix(r.header.Get("Content-Type"), "text/html"):
			continue
		}
		page, _ := url.Parse(c.h.base + final)
		for _, m := range linkRE.FindAllStringSubmatch(r.body, -1) {
			u, err := page.Parse(html.UnescapeString(m[1]))
			if err != nil {
				t.Errorf("%s shows a link that cannot be read: %q", final, m[1])
				continue
			}
			if u.Scheme != base.Scheme || u.Host != base.Host {
				if u.Scheme == "http" || u.Scheme == "https" {
					t.Errorf("%s links another origin: %s", final, u)
				}
				continue
			}
			next := u.RequestURI()
			if next == "/ui/sign-out" || seen[next] {
				continue
			}
			seen[next] = true
			queue = append(queue, next)
		}
	}
	return visited
}

// follow GETs path and follows same-origin redirects; it returns the last answer and its path.
func (c *client) follow(t *testing.T, path string) (response, string) {
	t.Helper()
	for range 5 {
		r := c.get(t, path)
		if r.status/100 != 3 {
			return r, path
		}
		u, err := url.Parse(c.h.base + path)
		if err != nil {
			t.Fatal(err)
		}
		loc, err := u.Parse(r.header.Get("Location"))
		if err != nil || loc.Host != u.Host {
			t.Errorf("GET %s redirects to %q", path, r.header.Get("Location"))
			return r, path
		}
		path = loc.RequestURI()
	}
	t.Errorf("GET %s: too many redirects", path)
	return response{}, path
}

// TestCrawlLinks signs in with a few records present and follows every link the pages show.
func TestCrawlLinks(t *testing.T) {
	h := start(t)
	c, _ := h.signedIn(t, "alice")
	id := populate(t, h, c)
	visited := crawl(t, c)
	t.Logf("the crawl visited %d links", len(visited))
	// The crawl reached the records, not just the navigation.
	for _, want := range []string{"/ui/partners/b", "/ui/partners/b/panels/as2/edit", "/ui/organizations/acme",
		fmt.Sprintf("/ui/messages/%d", id), "/ui/routes"} {
		found := false
		for _, v := range visited {
			found = found || v == want
		}
		if !found {
			t.Errorf("the crawl did not reach %s; visited %v", want, visited)
		}
	}
}
