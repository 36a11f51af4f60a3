package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
)

// deadLetters makes a blocked session of inbox (one failed, two parked) and a failed
// delivery to archive of a message from local to acme; it returns the four delivery ids
// in that order.
func (b *bundle) deadLetters() []int64 {
	t := b.t
	t.Helper()
	ctx := context.Background()
	b.seed()
	first, err := b.store.AllocateMessageIDs(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	var batch []persistence.NewMessage
	for i := range 4 {
		id := first + int64(i)
		nm := persistence.NewMessage{
			Message: persistence.Message{ID: id, From: "acme", To: "local", Source: "outbox", OriginalFileName: persistence.FileName(fmt.Sprintf("o%d.edi", i)),
				SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", CorrelationID: "c", OriginEventID: fmt.Sprint(id)},
			Dispatch: true, Targets: []persistence.InstanceName{"inbox"},
			Sessions: map[persistence.InstanceName]persistence.DeliverySession{"inbox": {Key: "inbox|acme→local"}},
		}
		if i == 3 {
			nm.Message.From, nm.Message.To = "local", "acme"
			nm.Targets, nm.Sessions = []persistence.InstanceName{"archive"}, nil
		}
		batch = append(batch, nm)
	}
	if _, err := b.store.InsertMessages(ctx, batch); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, tg := range []persistence.InstanceName{"inbox", "archive"} {
		claims, err := b.store.ClaimDeliveries(ctx, tg, 10, time.Minute, time.Now())
		if err != nil || len(claims) != 1 {
			t.Fatalf("claim %s: %v %v", tg, claims, err)
		}
		c := claims[0].Delivery
		if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: c.ID, Token: c.ClaimToken,
			Kind: persistence.OutcomeFailed, Reason: "HTTP 400"}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		ds, err := b.store.ListDeliveries(ctx, first+int64(i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ds[0].ID)
	}
	return ids
}

type deadLetterList struct {
	Deliveries []persistence.DeadLetter `json:"deliveries"`
	Total      int                      `json:"total"`
	Limit      int                      `json:"limit"`
	Offset     int                      `json:"offset"`
}

func (l deadLetterList) ids() []int64 {
	var out []int64
	for _, d := range l.Deliveries {
		out = append(out, d.ID)
	}
	return out
}

// The dead-letter list over REST: every filter, paging, and bad parameters named.
func TestDeadLettersList(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		ids := b.deadLetters()
		for _, tc := range []struct {
			query string
			want  []int64
		}{
			{"", ids},
			{"?state=failed", []int64{ids[0], ids[3]}},
			{"?state=parked", ids[1:3]},
			{"?target=archive", ids[3:]},
			{"?partner=acme", ids},
			{"?session=" + "inbox%7Cacme%E2%86%92local", ids[:3]},
			{"?older_than=1h", nil},
			{"?newer_than=1h", ids},
			{"?limit=2&offset=1", ids[1:3]},
		} {
			var l deadLetterList
			b.must(200, "GET", "/api/v1/dead-letters"+tc.query, "").json(t, &l)
			if !slices.Equal(l.ids(), tc.want) {
				t.Errorf("%q lists %v, want %v", tc.query, l.ids(), tc.want)
			}
		}
		var l deadLetterList
		b.must(200, "GET", "/api/v1/dead-letters?target=archive", "").json(t, &l)
		if d := l.Deliveries[0]; d.From != "local" || d.To != "acme" || d.FileName != "o3.edi" || d.LastError != "HTTP 400" ||
			d.State != persistence.DeliveryFailed || d.SessionKey != "" || l.Total != 1 || l.Limit != 100 {
			t.Fatalf("dead letter = %+v", l)
		}
		for query, field := range map[string]string{
			"?state=queued":                        "state",
			"?target=Bad%20Name":                   "target",
			"?partner=a%20b":                       "partner",
			"?older_than=soon":                     "older_than",
			"?newer_than=-1h":                      "newer_than",
			"?older_than=2h&newer_than=1h":         "older_than",
			"?color=red":                           "color",
			"?target=a&target=b":                   "target",
			"?session=" + strings.Repeat("x", 401): "session",
			"?error_class=http_6xx":                "error_class",
		} {
			if e := b.must(400, "GET", "/api/v1/dead-letters"+query, "").errorOf(t); e.Details[field] == nil {
				t.Errorf("%q: error %+v does not name %s", query, e, field)
			}
		}
	})
}

type bulkAnswer struct {
	Action    string `json:"action"`
	Requested int    `json:"requested"`
	Succeeded int    `json:"succeeded"`
	Results   []struct {
		ID       int64                 `json:"id"`
		OK       bool                  `json:"ok"`
		Delivery *persistence.Delivery `json:"delivery"`
		Error    *errorObject          `json:"error"`
	} `json:"results"`
}

// Bulk actions by ids and by filter: per-id results, the bound on a filter, and one
// audit event naming the token and the count.
func TestDeadLettersBulk(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		ids := b.deadLetters()

		// By ids: the parked one cannot be resubmitted, the failed ones can.
		var got bulkAnswer
		b.must(200, "POST", "/api/v1/dead-letters/resubmit", fmt.Sprintf(`{"ids":[%d,%d,%d]}`, ids[3], ids[1], ids[0])).json(t, &got)
		if got.Action != "resubmit" || got.Requested != 3 || got.Succeeded != 2 || len(got.Results) != 3 {
			t.Fatalf("resubmit = %+v", got)
		}
		for i, want := range []bool{true, false, true} {
			r := got.Results[i]
			if r.OK != want || (want && r.Delivery.State != persistence.DeliveryQueued) || (!want && (r.Error == nil || r.Error.Code != "CONFLICT")) {
				t.Fatalf("result %d = %+v", i, r)
			}
		}

		// By filter: the bound refuses, then the action takes exactly what matches.
		if e := b.must(409, "POST", "/api/v1/dead-letters/skip", `{"filter":{"state":"parked"},"max":1}`).errorOf(t); e.Code != "TOO_MANY_DELIVERIES" || e.Details["matched"] != float64(2) {
			t.Fatalf("over the bound: %+v", e)
		}
		if e := b.must(409, "POST", "/api/v1/dead-letters/resubmit", `{"filter":{"state":"parked"}}`).errorOf(t); e.Code != "NO_DELIVERIES" {
			t.Fatalf("a state the action does not take: %+v", e)
		}
		if e := b.must(409, "POST", "/api/v1/dead-letters/skip", `{"filter":{"target":"archive"}}`).errorOf(t); e.Code != "NO_DELIVERIES" {
			t.Fatalf("nothing matches: %+v", e)
		}
		b.must(200, "POST", "/api/v1/dead-letters/skip", `{"filter":{"state":"parked","partner":"acme"},"max":2}`).json(t, &got)
		if got.Requested != 2 || got.Succeeded != 2 || got.Results[0].ID != ids[1] || got.Results[1].Delivery.State != persistence.DeliverySkipped {
			t.Fatalf("skip by filter = %+v", got)
		}
		var l deadLetterList
		b.must(200, "GET", "/api/v1/dead-letters", "").json(t, &l)
		if l.Total != 0 {
			t.Fatalf("dead letters left: %+v", l)
		}

		for body, field := range map[string]string{
			`{}`:                                    "ids",
			`{"ids":[]}`:                            "ids",
			`{"ids":[1],"filter":{}}`:               "filter",
			`{"ids":[1],"max":3}`:                   "max",
			`{"filter":{},"max":1001}`:              "max",
			`{"filter":{"colour":"red"}}`:           "filter.colour",
			`{"filter":{"older_than":"yesterday"}}`: "older_than",
		} {
			if e := b.must(400, "POST", "/api/v1/dead-letters/redeliver", body).errorOf(t); e.Details[field] == nil {
				t.Errorf("%s: error %+v does not name %s", body, e, field)
			}
		}
		b.must(415, "POST", "/api/v1/dead-letters/redeliver", `{"ids":[1]}`, withContentType("text/plain"))

		events, _, err := b.store.ListAudit(ctx, persistence.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var bulk []string
		for _, e := range events {
			if strings.HasPrefix(e.Action, "bulk_") {
				bulk = append(bulk, fmt.Sprintf("%s %s %s", e.Actor, e.Action, e.RecordName))
			}
		}
		want := []string{"token:tester bulk_skip 2 of 2 deliveries", "token:tester bulk_resubmit 2 of 3 deliveries"}
		if !slices.Equal(bulk, want) {
			t.Fatalf("bulk audit events = %q, want %q", bulk, want)
		}
	})
}
