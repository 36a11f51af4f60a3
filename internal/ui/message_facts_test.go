package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/settings"
	"wharf/internal/storage"
)

// groupsFake is a module that lays its part of a message out in groups.
type groupsFake struct {
	id int64
	at time.Time
}

func (g groupsFake) MessagePanel(_ context.Context, id int64) (any, bool, error) {
	return map[string]any{"id": 12, "delivery_id": 34}, id == g.id, nil
}

func (g groupsFake) MessageFactGroups(_ context.Context, id int64) ([]module.PanelCard, bool, error) {
	if id != g.id {
		return nil, false, nil
	}
	return []module.PanelCard{
		{Title: "Identity", Details: []module.PanelDetail{{Label: "AS2 Message-ID", Value: "<abc@partner>"}}},
		{Title: "Receipt", Details: []module.PanelDetail{{Label: "Received", Value: g.at.Format(time.RFC3339)}}},
	}, true, nil
}

// serveWithPanels serves the UI over n messages from acme with the AS2 module's panels
// panelsOf makes for them, and signs a user in.
func serveWithPanels(t *testing.T, n int, panelsOf func([]persistence.Message) module.MessagePanels) ([]persistence.Message, *Server, *client) {
	t.Helper()
	b := newBundle(t)
	blobs, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mb := &messagesBundle{bundle: b, blobs: blobs}
	messageFixture(t, b.store)
	ms := mb.insert(t, n, acmeParty, writerInst)
	s := newServer(t, b, func(d *Deps) {
		d.Panels = map[string]module.MessagePanels{"as2": panelsOf(ms)}
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	return ms, s, mb.signedIn(t)
}

// utcShown finds a time shown in UTC in a page's text: a zone name or an RFC 3339 instant
// outside a datetime attribute.
var (
	datetimeAttr = regexp.MustCompile(`datetime="[^"]*"`)
	utcShown     = regexp.MustCompile(`\bUTC\b|\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?Z`)
)

// TestMessagePageFactsInGroupsAndZone: a module's facts follow the verdict in labelled
// groups, in place of its record with internal ids, and with display_timezone set no time
// on the message's page is shown in UTC.
func TestMessagePageFactsInGroupsAndZone(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	ms, s, c := serveWithPanels(t, 1, func(ms []persistence.Message) module.MessagePanels { return groupsFake{ms[0].ID, at} })
	m := ms[0]
	if err := s.store.PutSetting(context.Background(), settings.DisplayTimezone, "Asia/Kolkata"); err != nil {
		t.Fatal(err)
	}
	s.zone.changed() // as the settings page does on a change

	body := c.get(t, fmt.Sprintf("/ui/messages/%d", m.ID)).body
	for _, want := range []string{
		`<h3 class="card-subtitle">Identity</h3>`,
		`<dt>AS2 Message-ID</dt><dd class="wrap">&lt;abc@partner&gt;</dd>`,
		`<h3 class="card-subtitle">Receipt</h3>`,
		`<dt>Received</dt><dd class="wrap"><time datetime="2026-03-01T09:00:00Z">2026-03-01 14:30:00 IST</time></dd>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the message page lacks %s", want)
		}
	}
	if strings.Contains(body, "Delivery ID") {
		t.Error("the page shows the module's record with its internal ids")
	}
	if verdictAt, groupsAt := strings.Index(body, `id="message-verdict"`), strings.Index(body, "Identity</h3>"); verdictAt < 0 || verdictAt > groupsAt {
		t.Error("the facts do not follow the verdict")
	}
	if got := utcShown.FindAllString(datetimeAttr.ReplaceAllString(body, ""), -1); len(got) > 0 {
		t.Errorf("with display_timezone set, the page shows times in UTC: %q", got)
	}
}
