package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"wharf/internal/persistence"
)

// Ordered sessions over REST: a route's session_by, the blocked-session list with its
// filters, a delivery's session and place in the message detail, resubmit and skip with
// their conflict codes, and metadata sent with a message.
func TestSessionsREST(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		b.seed()
		if e := b.must(400, "POST", "/api/v1/routes", `{"source":"outbox","from":"*","to":"*","target":"inbox","session_by":"order"}`).errorOf(t); e.Details["session_by"] == nil {
			t.Fatalf("session_by on an unordered route: %+v", e)
		}
		var rt persistence.Route
		b.must(201, "POST", "/api/v1/routes", `{"source":"outbox","from":"*","to":"*","target":"inbox","ordered":true,"session_by":"order"}`).json(t, &rt)
		if rt.SessionBy != "order" || !rt.Ordered {
			t.Fatalf("route = %+v", rt)
		}

		// Metadata sent with a message is stored and keys its session.
		r := b.upload([]part{{name: "from", value: "local"}, {name: "to", value: "acme"}, {name: "source", value: "outbox"},
			{name: "metadata", value: `{"Order":"17","x-note":"rush"}`}, {name: "file", fileName: "a.edi", value: "x"}})
		if r.status != 201 {
			t.Fatalf("send = %d %s", r.status, r.body)
		}
		var sent messageDetail
		r.json(t, &sent)
		if sent.Metadata["order"] != "17" || sent.Metadata["x-note"] != "rush" {
			t.Fatalf("metadata = %v", sent.Metadata)
		}
		for _, bad := range []string{`{"order":1}`, `[]`, `{"bad name":"x"}`} {
			r := b.upload([]part{{name: "from", value: "local"}, {name: "to", value: "acme"}, {name: "source", value: "outbox"},
				{name: "metadata", value: bad}, {name: "file", fileName: "a.edi", value: "x"}})
			if r.status != 400 {
				t.Fatalf("metadata %s: %d %s", bad, r.status, r.body)
			}
			if e := r.errorOf(t); e.Details["metadata"] == nil {
				t.Fatalf("metadata %s: %+v", bad, e)
			}
		}

		// Three messages in one session of inbox; the first fails.
		first, err := b.store.AllocateMessageIDs(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		var batch []persistence.NewMessage
		for i := range 3 {
			id := first + int64(i)
			batch = append(batch, persistence.NewMessage{
				Message: persistence.Message{ID: id, From: "acme", To: "local", Source: "outbox", OriginalFileName: "o.edi",
					SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", CorrelationID: "c", OriginEventID: fmt.Sprint(id)},
				Dispatch: true, Targets: []persistence.InstanceName{"inbox"},
				Sessions: map[persistence.InstanceName]persistence.DeliverySession{"inbox": {Key: "inbox|acme→local"}},
			})
		}
		if _, err := b.store.InsertMessages(ctx, batch); err != nil {
			t.Fatal(err)
		}
		claims, err := b.store.ClaimDeliveries(ctx, "inbox", 10, time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var head persistence.Delivery
		for _, c := range claims {
			if c.Message.ID == first {
				head = c.Delivery
			}
		}
		if _, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: head.ID, Token: head.ClaimToken,
			Kind: persistence.OutcomeFailed, Reason: "HTTP 400"}}); err != nil {
			t.Fatal(err)
		}

		var list struct {
			Sessions []persistence.BlockedSession `json:"sessions"`
			Total    int                          `json:"total"`
		}
		b.must(200, "GET", "/api/v1/sessions", "").json(t, &list)
		if list.Total != 1 || list.Sessions[0].BlockedBy != head.ID || list.Sessions[0].Parked != 2 || list.Sessions[0].Error != "HTTP 400" {
			t.Fatalf("sessions = %+v", list)
		}
		for path, want := range map[string]int{
			"/api/v1/sessions?target=archive":          0,
			"/api/v1/sessions?target=inbox&party=acme": 1,
			"/api/v1/sessions?party=local":             1,
		} {
			b.must(200, "GET", path, "").json(t, &list)
			if list.Total != want {
				t.Errorf("%s lists %d, want %d", path, list.Total, want)
			}
		}
		b.must(400, "GET", "/api/v1/sessions?state=x", "")
		b.must(400, "GET", "/api/v1/sessions?target=Bad Name", "")

		var d messageDetail
		b.must(200, "GET", fmt.Sprintf("/api/v1/messages/%d", first+2), "").json(t, &d)
		if dl := d.Deliveries[0]; dl.State != persistence.DeliveryParked || dl.SessionKey != "inbox|acme→local" ||
			dl.SessionPosition == nil || *dl.SessionPosition != 2 || d.Status != persistence.StatusHeld {
			t.Fatalf("parked delivery = %+v (message %s)", dl, d.Status)
		}
		parked := d.Deliveries[0].ID

		if e := b.must(409, "POST", fmt.Sprintf("/api/v1/deliveries/%d/resubmit", parked), "").errorOf(t); e.Code != "NOT_RESUBMITTABLE" {
			t.Fatalf("resubmit parked: %+v", e)
		}
		b.must(404, "POST", "/api/v1/deliveries/999999/skip", "")
		b.must(400, "POST", "/api/v1/deliveries/x/skip", "")
		var got persistence.Delivery
		b.must(200, "POST", fmt.Sprintf("/api/v1/deliveries/%d/skip", head.ID), "{}").json(t, &got)
		if got.State != persistence.DeliverySkipped {
			t.Fatalf("skip = %+v", got)
		}
		if e := b.must(409, "POST", fmt.Sprintf("/api/v1/deliveries/%d/skip", head.ID), "").errorOf(t); e.Code != "NOT_SKIPPABLE" {
			t.Fatalf("skip twice: %+v", e)
		}
		b.must(200, "GET", "/api/v1/sessions", "").json(t, &list)
		if list.Total != 0 {
			t.Fatalf("still blocked: %+v", list)
		}
		h, err := b.store.ListHistory(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if last := h[len(h)-1]; last.Actor != "token:tester" {
			t.Fatalf("last history line %+v does not name the token", last)
		}
	})
}
