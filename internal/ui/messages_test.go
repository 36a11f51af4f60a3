package ui

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"wharf/internal/erasure"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/storage"
	"wharf/internal/ui/session"
)

// storeActions is the operator actions straight on the store, without the wake-ups the
// gateway adds.
type storeActions struct{ store *db.Store }

func (a storeActions) Redispatch(ctx context.Context, id int64, actor string) ([]persistence.Delivery, error) {
	return a.store.Redispatch(ctx, id, nil, nil, nil, actor)
}

func (a storeActions) Redeliver(ctx context.Context, id int64, mode persistence.ResendMode, actor string) (persistence.Delivery, error) {
	return a.store.Redeliver(ctx, id, mode, actor)
}

func (storeActions) RoutesChanged(context.Context) {}

var _ Actions = storeActions{}

// messagesBundle is a bundle whose server has actions and a payload store, with the
// message pages mounted as Handler mounts every page route.
type messagesBundle struct {
	*bundle
	blobs storage.Store
	ui    *Server
}

func setupMessages(t *testing.T) *messagesBundle {
	t.Helper()
	blobs, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return setupMessagesWith(t, blobs)
}

// setupMessagesWith is setupMessages with the given payload store.
func setupMessagesWith(t *testing.T, blobs storage.Store) *messagesBundle {
	t.Helper()
	b := newBundle(t)
	s := newServer(t, b, func(d *Deps) {
		d.Actions, d.Payloads, d.Erasure = storeActions{b.store}, blobs, erasure.New(b.store, blobs, nil)
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	messageFixture(t, b.store)
	return &messagesBundle{bundle: b, blobs: blobs, ui: s}
}

const (
	acmeParty   = persistence.PartyName("acme")
	betaParty   = persistence.PartyName("beta")
	localParty  = persistence.PartyName("local")
	pollerInst  = persistence.InstanceName("poller")
	writerInst  = persistence.InstanceName("writer")
	webhookInst = persistence.InstanceName("poster")
)

func messageFixture(t *testing.T, s *db.Store) {
	t.Helper()
	ctx := context.Background()
	for _, p := range []persistence.Party{
		{Kind: persistence.PartyOrganization, Name: localParty},
		{Kind: persistence.PartyPartner, Name: acmeParty},
		{Kind: persistence.PartyPartner, Name: betaParty},
	} {
		if _, err := s.CreateParty(ctx, p); err != nil && !errors.Is(err, persistence.ErrConflict) {
			t.Fatal(err)
		}
	}
	for _, c := range []persistence.PluginConfig{
		{Name: pollerInst, Type: persistence.PluginFilePoller, Enabled: true},
		{Name: writerInst, Type: persistence.PluginFileWriter, Enabled: true},
		{Name: webhookInst, Type: persistence.PluginHTTPPoster, Enabled: true},
	} {
		if _, err := s.CreatePluginConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}

// insert stores n messages from from to local, each with its document as a blob and
// dispatched to targets, and returns them in id order.
func (b *messagesBundle) insert(t *testing.T, n int, from persistence.PartyName, targets ...persistence.InstanceName) []persistence.Message {
	t.Helper()
	ctx := context.Background()
	first, err := b.store.AllocateMessageIDs(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]persistence.NewMessage, n)
	for i := range batch {
		id := first + int64(i)
		body := fmt.Sprintf("document %d\x00\xff", id)
		blob, err := b.blobs.Put(ctx, id, persistence.PayloadUnpacked, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		batch[i] = persistence.NewMessage{
			Message: persistence.Message{ID: id, From: from, To: localParty, Source: pollerInst,
				OriginalFileName: persistence.FileName(fmt.Sprintf("order-%d.edi", id)),
				Size:             blob.Size, SHA256: blob.SHA256,
				CorrelationID: fmt.Sprintf("corr-%d", id), OriginEventID: fmt.Sprintf("event-%d", id)},
			Payloads: []persistence.Payload{{Stage: persistence.PayloadUnpacked, Key: blob.Key,
				Size: blob.Size, SHA256: blob.SHA256}},
			Dispatch: true,
			Targets:  targets,
		}
	}
	msgs, err := b.store.InsertMessages(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// signedIn is a client signed in as alice.
func (b *messagesBundle) signedIn(t *testing.T) *client {
	t.Helper()
	c := b.client(t)
	secret, _ := b.enroll(t, c, "alice")
	if r := c.signIn(t, "alice", testPassword, b.code(t, secret), "/ui/"); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in = %d\n%s", r.status, r.body)
	}
	return c
}

var messageLinkRE = regexp.MustCompile(`<td><a href="/ui/messages/(\d+)">`)

func listedIDs(body string) []string {
	var ids []string
	for _, m := range messageLinkRE.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestMessageListFilters(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	fromAcme := b.insert(t, 2, acmeParty, writerInst)
	fromBeta := b.insert(t, 1, betaParty)

	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"", []int64{fromBeta[0].ID, fromAcme[1].ID, fromAcme[0].ID}},
		{"?from=acme", []int64{fromAcme[1].ID, fromAcme[0].ID}},
		{"?status=not_routed", []int64{fromBeta[0].ID}},
		{"?status=in_progress&source=poller", []int64{fromAcme[1].ID, fromAcme[0].ID}},
		{"?q=" + url.QueryEscape(fmt.Sprintf("order-%d", fromAcme[0].ID)), []int64{fromAcme[0].ID}},
		{"?to=beta", nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := c.get(t, "/ui/messages"+tc.query)
			if r.status != http.StatusOK {
				t.Fatalf("GET = %d\n%s", r.status, r.body)
			}
			var want []string
			for _, id := range tc.want {
				want = append(want, fmt.Sprint(id))
			}
			if got := listedIDs(r.body); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("rows = %v, want %v", got, want)
			}
		})
	}

	r := c.get(t, "/ui/messages?status=in_progress")
	if !strings.Contains(r.body, `<span class="badge badge-in_progress">in_progress</span>`) ||
		!strings.Contains(r.body, `<option value="in_progress" selected>`) {
		t.Errorf("list lacks the status badge or the selected filter:\n%s", r.body)
	}
}

func TestMessageListRefusesBadFilters(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	b.insert(t, 1, acmeParty, writerInst)
	for _, q := range []string{"status=lost", "from=ACME", "source=a%20b", "offset=-1", "offset=x",
		"q=" + strings.Repeat("x", maxMessageQuery+1)} {
		t.Run(q, func(t *testing.T) {
			r := c.get(t, "/ui/messages?"+q)
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, `class="field-error"`) {
				t.Errorf("GET ?%s = %d, want 400 with the form's error\n%s", q, r.status, r.body)
			}
			if ids := listedIDs(r.body); len(ids) != 0 {
				t.Errorf("refused filter lists rows %v", ids)
			}
		})
	}
}

func TestMessageListPages(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	b.insert(t, messagesPageSize+5, acmeParty, writerInst)
	b.insert(t, 1, betaParty, writerInst)

	first := c.get(t, "/ui/messages?from=acme")
	if n := len(listedIDs(first.body)); n != messagesPageSize {
		t.Fatalf("first page has %d rows, want %d", n, messagesPageSize)
	}
	if strings.Contains(first.body, `rel="prev"`) {
		t.Error("first page links to a previous page")
	}
	next := regexp.MustCompile(`href="([^"]+)" rel="next"`)
	link := template.HTMLEscapeString("/ui/messages?from=acme&offset=50")
	if got := match(t, next, first.body); got != link {
		t.Fatalf("next link = %q, want %q", got, link)
	}
	second := c.get(t, "/ui/messages?from=acme&offset=50")
	if n := len(listedIDs(second.body)); n != 5 {
		t.Errorf("second page has %d rows, want 5", n)
	}
	if strings.Contains(second.body, `rel="next"`) || !strings.Contains(second.body, `href="/ui/messages?from=acme" rel="prev"`) {
		t.Errorf("second page links wrong:\n%s", second.body)
	}
	if !strings.Contains(second.body, "51–55 of 55") {
		t.Errorf("second page does not count its rows:\n%s", second.body)
	}
}

func TestMessageDetail(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	m := b.insert(t, 1, acmeParty, writerInst, webhookInst)[0]

	r := c.get(t, fmt.Sprintf("/ui/messages/%d", m.ID))
	if r.status != http.StatusOK {
		t.Fatalf("GET detail = %d\n%s", r.status, r.body)
	}
	for _, want := range []string{string(m.OriginalFileName), m.SHA256, m.CorrelationID, m.OriginEventID,
		"<td>writer</td>", "<td>poster</td>", "dispatched", "received",
		fmt.Sprintf(`href="/ui/messages/%d/redispatch"`, m.ID),
		fmt.Sprintf(`href="/ui/messages/%d/payload?stage=unpacked"`, m.ID)} {
		if !strings.Contains(r.body, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
	// Queued deliveries cannot be requeued, so they offer no button.
	if strings.Contains(r.body, "/redeliver") {
		t.Errorf("detail offers redelivery of queued deliveries:\n%s", r.body)
	}

	for _, path := range []string{"/ui/messages/999999", "/ui/messages/x", "/ui/messages/0",
		"/ui/messages/999999/payload"} {
		if r := c.get(t, path); r.status != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, r.status)
		}
	}
}

func TestMessageRedeliver(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	ctx := context.Background()
	m, d := b.claimOne(t, writerInst)
	if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: d.ID,
		Token: d.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "refused by peer", At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	detailPath := fmt.Sprintf("/ui/messages/%d", m.ID)
	action := fmt.Sprintf("/ui/messages/%d/deliveries/%d/redeliver", m.ID, d.ID)

	page := c.get(t, detailPath)
	if !strings.Contains(page.body, `href="`+action+`"`) || !strings.Contains(page.body, "refused by peer") {
		t.Fatalf("detail of a failed delivery lacks the redeliver button or the error:\n%s", page.body)
	}
	// The button leads to a confirmation; a file writer's delivery offers no resend choice.
	confirm := c.get(t, action)
	if confirm.status != http.StatusOK || !strings.Contains(confirm.body, `action="`+action+`"`) ||
		!strings.Contains(confirm.body, `name="confirm" value="yes"`) || strings.Contains(confirm.body, `name="resend"`) {
		t.Fatalf("confirmation page = %d:\n%s", confirm.status, confirm.body)
	}
	token := match(t, csrfRE, confirm.body)

	if r := c.post(t, action, url.Values{"confirm": {"yes"}}); r.status != http.StatusForbidden {
		t.Errorf("redeliver without CSRF token = %d, want 403", r.status)
	}
	// Without its confirmation a post only leads to the confirmation page.
	if r := c.post(t, action, url.Values{session.CSRFField: {token}}); r.status != http.StatusSeeOther || r.header.Get("Location") != action {
		t.Errorf("unconfirmed redeliver = %d to %q, want 303 to %s", r.status, r.header.Get("Location"), action)
	}
	if r := c.post(t, action, url.Values{session.CSRFField: {token}, "confirm": {"yes"}, "resend": {"twice"}}); r.status != http.StatusBadRequest {
		t.Errorf("redeliver with an unknown resend mode = %d, want 400", r.status)
	}
	if got, _ := b.store.GetDelivery(ctx, d.ID); got.State != persistence.DeliveryFailed {
		t.Fatalf("refused posts changed the delivery to %s", got.State)
	}

	r := c.post(t, action, url.Values{session.CSRFField: {token}, "confirm": {"yes"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != detailPath {
		t.Fatalf("redeliver = %d to %q, want 303 to %s\n%s", r.status, r.header.Get("Location"), detailPath, r.body)
	}
	if got, _ := b.store.GetDelivery(ctx, d.ID); got.State != persistence.DeliveryQueued {
		t.Errorf("delivery after redeliver = %s, want queued", got.State)
	}
	after := c.get(t, detailPath)
	if !strings.Contains(after.body, "Redelivery requested.") || !strings.Contains(after.body, "user:alice") ||
		!strings.Contains(after.body, persistence.ResendSame.Reason()) {
		t.Errorf("detail after redeliver lacks the flash or the history line:\n%s", after.body)
	}

	// Queued now, so the store refuses a second request; the page says so.
	r = c.post(t, action, url.Values{session.CSRFField: {token}, "confirm": {"yes"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("second redeliver = %d, want 303", r.status)
	}
	if again := c.get(t, detailPath); !strings.Contains(again.body, "flash-danger") {
		t.Errorf("refused redeliver shows no danger flash:\n%s", again.body)
	}

	// A delivery named under another message's URL is not found.
	other := b.insert(t, 1, acmeParty, writerInst)[0]
	wrong := fmt.Sprintf("/ui/messages/%d/deliveries/%d/redeliver", other.ID, d.ID)
	if r := c.post(t, wrong, url.Values{session.CSRFField: {token}, "confirm": {"yes"}}); r.status != http.StatusNotFound {
		t.Errorf("redeliver under another message = %d, want 404", r.status)
	}
}

func TestMessageRedispatch(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	m := b.insert(t, 1, acmeParty, writerInst)[0]
	detailPath := fmt.Sprintf("/ui/messages/%d", m.ID)
	confirm := c.get(t, detailPath+"/redispatch")
	if confirm.status != http.StatusOK || !strings.Contains(confirm.body, `action="`+detailPath+`/redispatch"`) {
		t.Fatalf("confirmation page = %d:\n%s", confirm.status, confirm.body)
	}
	token := match(t, csrfRE, confirm.body)

	// Without its confirmation a post only leads to the confirmation page.
	r := c.post(t, detailPath+"/redispatch", url.Values{session.CSRFField: {token}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != detailPath+"/redispatch" {
		t.Fatalf("unconfirmed redispatch = %d to %q, want 303 to the confirmation", r.status, r.header.Get("Location"))
	}
	if strings.Contains(c.get(t, detailPath).body, "user:alice") {
		t.Fatal("an unconfirmed redispatch was carried out")
	}
	r = c.post(t, detailPath+"/redispatch", url.Values{session.CSRFField: {token}, "confirm": {"yes"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != detailPath {
		t.Fatalf("redispatch = %d to %q, want 303 to %s", r.status, r.header.Get("Location"), detailPath)
	}
	after := c.get(t, detailPath)
	if !strings.Contains(after.body, "Redispatch requested.") || !strings.Contains(after.body, "user:alice") {
		t.Errorf("detail after redispatch lacks the flash or the history line:\n%s", after.body)
	}
	if r := c.post(t, "/ui/messages/999999/redispatch", url.Values{session.CSRFField: {token}, "confirm": {"yes"}}); r.status != http.StatusNotFound {
		t.Errorf("redispatch of an unknown message = %d, want 404", r.status)
	}
}

// TestMessageActionsUnavailable: without actions the buttons are hidden and a post is 503.
func TestMessageActionsUnavailable(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	m := b.insert(t, 1, acmeParty, writerInst)[0]
	detailPath := fmt.Sprintf("/ui/messages/%d", m.ID)
	token := match(t, csrfRE, c.get(t, detailPath).body)
	b.ui.actions = nil

	if page := c.get(t, detailPath); strings.Contains(page.body, "/redispatch") {
		t.Errorf("detail offers redispatch without actions:\n%s", page.body)
	}
	if r := c.post(t, detailPath+"/redispatch", url.Values{session.CSRFField: {token}}); r.status != http.StatusServiceUnavailable {
		t.Errorf("redispatch without actions = %d, want 503", r.status)
	}
}

func TestMessagePayloadDownload(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	m := b.insert(t, 1, acmeParty, writerInst)[0]
	base := fmt.Sprintf("/ui/messages/%d/payload", m.ID)

	r := c.get(t, base+"?stage=unpacked")
	if r.status != http.StatusOK || r.body != fmt.Sprintf("document %d\x00\xff", m.ID) {
		t.Fatalf("download = %d %q", r.status, r.body)
	}
	for name, want := range map[string]string{
		"Content-Type":           "application/octet-stream",
		"X-Content-Type-Options": "nosniff",
		"Content-Disposition":    fmt.Sprintf("attachment; filename=order-%d.edi", m.ID),
	} {
		if got := r.header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if r := c.get(t, base+"?stage=secret"); r.status != http.StatusBadRequest {
		t.Errorf("unknown stage = %d, want 400", r.status)
	}
	if r := c.get(t, base+"?stage=receipt"); r.status != http.StatusNotFound {
		t.Errorf("missing stage = %d, want 404", r.status)
	}
}

func TestMessagePagesNeedSignIn(t *testing.T) {
	b := setupMessages(t)
	m := b.insert(t, 1, acmeParty, writerInst)[0]
	c := b.client(t)
	for _, path := range []string{"/ui/messages", fmt.Sprintf("/ui/messages/%d", m.ID),
		fmt.Sprintf("/ui/messages/%d/payload", m.ID)} {
		r := c.get(t, path)
		if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/ui/sign-in") {
			t.Errorf("GET %s signed out = %d to %q, want a redirect to sign-in", path, r.status, r.header.Get("Location"))
		}
	}
	if r := c.post(t, fmt.Sprintf("/ui/messages/%d/redispatch", m.ID), url.Values{}); r.status != http.StatusUnauthorized {
		t.Errorf("POST redispatch signed out = %d, want 401", r.status)
	}
}

// TestMessageDetailShowsAHandoff shows a delivery waiting for an in-house system's report
// with the reference it answered with and when the report is due.
func TestMessageDetailShowsAHandoff(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	ctx := context.Background()
	m, d := b.claimOne(t, webhookInst)
	due := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: d.ID, Token: d.ClaimToken,
		Kind: persistence.OutcomeAwaitingAck, AckDeadline: due, ExternalRef: "job-4711", At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	r := c.get(t, fmt.Sprintf("/ui/messages/%d", m.ID))
	for _, want := range []string{"awaiting_ack", `<span class="mono">job-4711</span>`, `<time datetime="2031-05-06T07:08:09Z">`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("detail lacks %q:\n%s", want, r.body)
		}
	}
}
