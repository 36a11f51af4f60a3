package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/ui/session"
)

// storeBulk is the bulk actions straight on the store.
type storeBulk struct{ store *db.Store }

func (a storeBulk) ActOnDeliveries(ctx context.Context, action persistence.DeliveryAction, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return a.store.ActOnDeliveries(ctx, action, ids, actor)
}

// setupDeadLetters serves the UI with (or without) the bulk actions over a store holding
// a blocked session of writer (one failed, two parked) and a failed delivery to poster
// from beta; it returns the four delivery ids in that order.
func setupDeadLetters(t *testing.T, withActions bool) (*messagesBundle, []int64) {
	t.Helper()
	b := newBundle(t)
	s := newServer(t, b, func(d *Deps) {
		if withActions {
			d.DeadLetters = storeBulk{b.store}
		}
	})
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	messageFixture(t, b.store)
	ctx := context.Background()
	first, err := b.store.AllocateMessageIDs(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	var batch []persistence.NewMessage
	for i := range 4 {
		id := first + int64(i)
		nm := persistence.NewMessage{
			Message: persistence.Message{ID: id, From: acmeParty, To: localParty, Source: pollerInst,
				OriginalFileName: persistence.FileName(fmt.Sprintf("order-%d.edi", i)),
				SHA256:           "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", CorrelationID: "c", OriginEventID: fmt.Sprint(id)},
			Dispatch: true, Targets: []persistence.InstanceName{writerInst},
			Sessions: map[persistence.InstanceName]persistence.DeliverySession{writerInst: {Key: "writer|acme→local"}},
		}
		if i == 3 {
			nm.Message.From = betaParty
			nm.Targets, nm.Sessions = []persistence.InstanceName{webhookInst}, nil
		}
		batch = append(batch, nm)
	}
	if _, err := b.store.InsertMessages(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for _, tg := range []persistence.InstanceName{writerInst, webhookInst} {
		claims, err := b.store.ClaimDeliveries(ctx, tg, 10, time.Minute, time.Now())
		if err != nil || len(claims) != 1 {
			t.Fatalf("claim %s: %d %v", tg, len(claims), err)
		}
		d := claims[0].Delivery
		if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: d.ID, Token: d.ClaimToken,
			Kind: persistence.OutcomeFailed, Reason: "refused by peer"}}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []int64
	for i := range 4 {
		ds, err := b.store.ListDeliveries(ctx, first+int64(i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ds[0].ID)
	}
	return &messagesBundle{bundle: b}, ids
}

var (
	deadLetterRowRE = regexp.MustCompile(`name="id" value="(\d+)" id="dl-`)
	hiddenIDRE      = regexp.MustCompile(`<input type="hidden" name="id" value="(\d+)">`)
)

func allMatches(re *regexp.Regexp, body string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func idStrings(ids ...int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprint(id)
	}
	return out
}

// The dead letters page: the list and its filters, the bulk buttons, a confirmation that
// names how many deliveries the action takes (by ids or every match) and carries exactly
// those, and the action with its audit event.
func TestDeadLettersPage(t *testing.T) {
	b, ids := setupDeadLetters(t, true)
	c := b.signedIn(t)

	r := c.get(t, "/ui/dead-letters")
	if r.status != http.StatusOK || !slices.Equal(allMatches(deadLetterRowRE, r.body), idStrings(ids...)) {
		t.Fatalf("list = %d rows %v, want %v\n%s", r.status, allMatches(deadLetterRowRE, r.body), ids, r.body)
	}
	for _, want := range []string{`Select all 4 matching the filters`, `value="redeliver">Redeliver selected`,
		`value="resubmit">Resubmit selected`, `value="skip">Skip selected`, "writer|acme→lo", "refused by peer", `href="/ui/dead-letters"`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the list lacks %q", want)
		}
	}
	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"?state=parked", ids[1:3]},
		{"?target=poster", ids[3:]},
		{"?partner=beta", ids[3:]},
		{"?session=" + url.QueryEscape("writer|acme→local"), ids[:3]},
	} {
		r := c.get(t, "/ui/dead-letters"+tc.query)
		if got := allMatches(deadLetterRowRE, r.body); !slices.Equal(got, idStrings(tc.want...)) {
			t.Errorf("%s lists %v, want %v", tc.query, got, tc.want)
		}
	}
	if r := c.get(t, "/ui/dead-letters?older_than=soon"); r.status != http.StatusBadRequest || !strings.Contains(r.body, "Must be a duration") {
		t.Errorf("a bad age = %d\n%s", r.status, r.body)
	}

	for _, tc := range []struct {
		name, query string
		question    string
		left        string
		ids         []int64
	}{
		{"by ids", fmt.Sprintf("action=resubmit&id=%d&id=%d&id=%d", ids[0], ids[1], ids[3]),
			"Resubmit 2 deliveries?", "1 of the 3 selected are left as they are", []int64{ids[0], ids[3]}},
		{"all matching", "action=skip&all=1&state=parked", "Skip 2 deliveries?", "", ids[1:3]},
		{"one", fmt.Sprintf("action=redeliver&id=%d", ids[3]), "Redeliver 1 delivery?", "", ids[3:]},
		{"all matching that the action takes", "action=resubmit&all=1", "Resubmit 2 deliveries?", "", []int64{ids[0], ids[3]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.get(t, "/ui/dead-letters/confirm?"+tc.query)
			if r.status != http.StatusOK || !strings.Contains(r.body, "<h1>"+tc.question+"</h1>") ||
				!strings.Contains(r.body, `<button type="submit" class="btn btn-primary">`+tc.question+`</button>`) {
				t.Fatalf("confirmation = %d, want %q\n%s", r.status, tc.question, r.body)
			}
			if got := allMatches(hiddenIDRE, r.body); !slices.Equal(got, idStrings(tc.ids...)) {
				t.Fatalf("the confirmation carries %v, want %v", got, tc.ids)
			}
			if tc.left != "" && !strings.Contains(r.body, tc.left) {
				t.Fatalf("the confirmation does not say %q", tc.left)
			}
		})
	}
	if r := c.get(t, fmt.Sprintf("/ui/dead-letters/confirm?action=resubmit&id=%d", ids[1])); !strings.Contains(r.body, "None of the 1 selected deliveries can be resubmitted") ||
		strings.Contains(r.body, `action="/ui/dead-letters/resubmit"`) || !strings.Contains(r.body, "<h1>Nothing to resubmit</h1>") {
		t.Errorf("a confirmation of nothing to do:\n%s", r.body)
	}
	for _, q := range []string{"action=purge&id=1", "action=skip", "action=skip&id=x", "action=skip&all=1&state=queued"} {
		if r := c.get(t, "/ui/dead-letters/confirm?"+q); r.status != http.StatusBadRequest {
			t.Errorf("confirm?%s = %d, want 400", q, r.status)
		}
	}

	// A POST without its confirmation goes to it; with it, the action takes the ids.
	confirm := c.get(t, "/ui/dead-letters/confirm?action=skip&all=1&state=parked")
	token := match(t, csrfRE, confirm.body)
	form := url.Values{session.CSRFField: {token}, "id": idStrings(ids[1:3]...)}
	if r := c.post(t, "/ui/dead-letters/skip", form); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/ui/dead-letters/confirm?") {
		t.Fatalf("unconfirmed = %d %s", r.status, r.header.Get("Location"))
	}
	form.Set("confirm", "yes")
	r = c.post(t, "/ui/dead-letters/skip", form)
	if r.status != http.StatusOK || !strings.Contains(r.body, "2 of 2 deliveries skipped.") {
		t.Fatalf("skip = %d\n%s", r.status, r.body)
	}
	r = c.post(t, "/ui/dead-letters/skip", form)
	if !strings.Contains(r.body, "0 of 2 deliveries skipped.") || !strings.Contains(r.body, fmt.Sprintf("Delivery %d: delivery %d is skipped", ids[1], ids[1])) {
		t.Fatalf("skip again:\n%s", r.body)
	}
	events, _, err := b.store.ListAudit(context.Background(), persistence.AuditFilter{Action: "bulk_skip"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, e.Actor+" "+e.RecordName)
	}
	if !slices.Equal(got, []string{"user:alice 0 of 2 deliveries", "user:alice 2 of 2 deliveries"}) {
		t.Fatalf("bulk audit events = %q", got)
	}
	if r := c.get(t, "/ui/dead-letters"); !slices.Equal(allMatches(deadLetterRowRE, r.body), idStrings(ids[0], ids[3])) {
		t.Fatalf("after the skip the list shows %v", allMatches(deadLetterRowRE, r.body))
	}
}

// Without the gateway's bulk actions the list shows no buttons and the actions say so.
func TestDeadLettersWithoutActions(t *testing.T) {
	b, ids := setupDeadLetters(t, false)
	c := b.signedIn(t)
	r := c.get(t, "/ui/dead-letters")
	if r.status != http.StatusOK || strings.Contains(r.body, "Skip selected") || !strings.Contains(r.body, "refused by peer") {
		t.Fatalf("list without actions = %d\n%s", r.status, r.body)
	}
	if r := c.get(t, fmt.Sprintf("/ui/dead-letters/confirm?action=skip&id=%d", ids[0])); r.status != http.StatusServiceUnavailable {
		t.Fatalf("confirm without actions = %d", r.status)
	}
}
