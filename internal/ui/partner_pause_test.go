package ui

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

// TestPartnerPausePages: a partner paused by a refusal shows it on its page (why, since,
// how many wait, Resume), in the partner list's health and on the dashboard; an operator
// resumes it, and pauses it by hand with a reason the form checks.
func TestPartnerPausePages(t *testing.T) {
	b := setupMessages(t)
	b.clock.now = time.Now().UTC()
	c := b.signedIn(t)
	ctx := context.Background()
	if _, err := b.store.CreatePluginConfig(ctx, persistence.PluginConfig{Name: "sender", Type: persistence.PluginAS2Sender, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	const reason = "the partner refused a message with authentication-failed"
	if _, err := b.store.PausePartner(ctx, localParty, reason, "user:alice"); err == nil {
		t.Fatal("an organization was paused")
	}
	first, err := b.store.AllocateMessageIDs(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	var batch []persistence.NewMessage
	for i := range 3 {
		id := first + int64(i)
		batch = append(batch, persistence.NewMessage{Message: persistence.Message{ID: id, From: localParty, To: acmeParty, Source: pollerInst,
			OriginalFileName: "o.edi", SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			CorrelationID: "c", OriginEventID: "e" + string(rune('a'+i))}, Dispatch: true, Targets: []persistence.InstanceName{"sender"}})
	}
	if _, err := b.store.InsertMessages(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.PausePartner(ctx, acmeParty, reason, "system"); err != nil {
		t.Fatal(err)
	}

	page := c.get(t, "/ui/partners/acme").body
	card := regexp.MustCompile(`(?s)id="partner-pause".*?</section>`).FindString(page)
	for _, want := range []string{"Sending paused", `id="partner-pause-reason">` + reason, `id="partner-pause-waiting">3</dd>`,
		"Wharf, after the partner's refusal", `action="/ui/partners/acme/resume"`} {
		if !strings.Contains(card, want) {
			t.Errorf("pause card lacks %q:\n%s", want, card)
		}
	}
	if !strings.Contains(page, `id="partner-health">paused, 3 deliveries wait</span>`) {
		t.Error("partner health does not say paused")
	}
	if list := c.get(t, "/ui/partners").body; !strings.Contains(list, `<span class="badge badge-danger">paused, 3 deliveries wait</span>`) {
		t.Error("partner list's health does not say paused")
	}
	home := c.get(t, "/ui/").body
	paused := regexp.MustCompile(`(?s)id="paused-partners">.*?</ul>`).FindString(home)
	if !strings.Contains(paused, `href="/ui/partners/acme">acme</a>`) || !strings.Contains(paused, "3 deliveries wait") ||
		!strings.Contains(paused, reason) || !strings.Contains(paused, `action="/ui/partners/acme/resume"`) {
		t.Errorf("dashboard's paused partners = %s", paused)
	}
	if by := regexp.MustCompile(`(?s)id="problems-by-partner">.*?</ul>`).FindString(home); !strings.Contains(by, `href="/ui/partners/acme">acme</a> <span class="badge badge-danger">3</span>`) {
		t.Errorf("the held messages are not acme's problems: %s", by)
	}

	token := match(t, csrfRE, page)
	r := c.post(t, "/ui/partners/acme/resume", url.Values{session.CSRFField: {token}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/partners/acme" {
		t.Fatalf("resume = %d %s", r.status, r.header.Get("Location"))
	}
	if _, err := b.store.GetPartnerPause(ctx, acmeParty); err == nil {
		t.Fatal("still paused after resume")
	}
	page = c.get(t, "/ui/partners/acme").body
	if !strings.Contains(page, "Resumed: the deliveries that waited are queued") || !strings.Contains(page, `action="/ui/partners/acme/pause"`) {
		t.Errorf("partner page after resume lacks the flash or the pause form")
	}
	if r := c.post(t, "/ui/partners/acme/resume", url.Values{session.CSRFField: {token}}); r.status != http.StatusSeeOther {
		t.Fatalf("resume twice = %d", r.status)
	}
	if page := c.get(t, "/ui/partners/acme").body; !strings.Contains(page, "was not paused") {
		t.Error("a second resume does not say it was not paused")
	}

	// By hand: no reason is refused beside the field; a reason pauses.
	r = c.post(t, "/ui/partners/acme/pause", url.Values{session.CSRFField: {token}, "reason": {""}})
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="reason-error"`) {
		t.Fatalf("pause without a reason = %d", r.status)
	}
	r = c.post(t, "/ui/partners/acme/pause", url.Values{session.CSRFField: {token}, "reason": {"their maintenance window"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("pause = %d", r.status)
	}
	p, err := b.store.GetPartnerPause(ctx, acmeParty)
	if err != nil || p.Actor != "user:alice" || p.Waiting != 3 {
		t.Fatalf("pause by hand = %+v, %v", p, err)
	}
	if r := c.post(t, "/ui/partners/nobody/pause", url.Values{session.CSRFField: {token}, "reason": {"x"}}); r.status != http.StatusNotFound {
		t.Fatalf("pause of an unknown partner = %d", r.status)
	}
}
