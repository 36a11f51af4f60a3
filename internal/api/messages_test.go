package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
)

// sendTo sends a document by hand to a target and returns the message.
func (b *bundle) sendTo(t *testing.T, target, from, to, file, content string) messageDetail {
	t.Helper()
	r := b.upload([]part{{name: "from", value: from}, {name: "to", value: to}, {name: "target", value: target},
		{name: "file", fileName: file, value: content}})
	if r.status != 201 {
		t.Fatalf("send = %d %s", r.status, r.body)
	}
	var d messageDetail
	r.json(t, &d)
	return d
}

func TestSendMessage(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		b.must(201, "POST", "/api/v1/routes", `{"source":"outbox","from":"local","to":"acme","target":"archive"}`)

		t.Run("to a target", func(t *testing.T) {
			r := b.upload([]part{{name: "from", value: "local"}, {name: "to", value: "acme"}, {name: "target", value: "inbox"},
				{name: "correlation_id", value: "PO-4711"}, {name: "file", fileName: "order.edi", value: "UNA:+.? '"}})
			if r.status != 201 {
				t.Fatalf("send = %d %s", r.status, r.body)
			}
			var d messageDetail
			r.json(t, &d)
			sum := sha256.Sum256([]byte("UNA:+.? '"))
			if d.Source != "manual" || d.From != "local" || d.To != "acme" || d.OriginalFileName != "order.edi" ||
				d.Size != 9 || d.SHA256 != hex.EncodeToString(sum[:]) || d.CorrelationID != "PO-4711" {
				t.Errorf("message %+v", d.Message)
			}
			if len(d.Deliveries) != 1 || d.Deliveries[0].Target != "inbox" || d.Deliveries[0].State != persistence.DeliveryQueued {
				t.Errorf("deliveries %+v", d.Deliveries)
			}
			if r.header.Get("Location") != fmt.Sprintf("/api/v1/messages/%d", d.ID) {
				t.Errorf("Location %q", r.header.Get("Location"))
			}
		})

		t.Run("routed from a source", func(t *testing.T) {
			r := b.upload([]part{{name: "from", value: "local"}, {name: "to", value: "acme"}, {name: "source", value: "outbox"},
				{name: "file", fileName: "routed.edi", value: "x"}})
			if r.status != 201 {
				t.Fatalf("send = %d %s", r.status, r.body)
			}
			var d messageDetail
			r.json(t, &d)
			if d.Source != "outbox" || len(d.Deliveries) != 1 || d.Deliveries[0].Target != "archive" {
				t.Errorf("message %+v deliveries %+v", d.Message, d.Deliveries)
			}
		})

		good := func(except string, extra ...part) []part {
			var ps []part
			for _, p := range []part{{name: "from", value: "local"}, {name: "to", value: "acme"}, {name: "target", value: "inbox"},
				{name: "file", fileName: "a.edi", value: "data"}} {
				if p.name != except {
					ps = append(ps, p)
				}
			}
			return append(ps, extra...)
		}
		tests := []struct {
			name  string
			parts []part
			field string
		}{
			{"path traversal", good("file", part{name: "file", fileName: "../x.edi", value: "data"}), "file"},
			{"absolute path", good("file", part{name: "file", fileName: "/etc/x.edi", value: "data"}), "file"},
			{"backslash path", good("file", part{name: "file", fileName: `..\x.edi`, value: "data"}), "file"},
			{"dot dot", good("file", part{name: "file", fileName: "..", value: "data"}), "file"},
			{"no file", good("file"), "file"},
			{"empty file", good("file", part{name: "file", fileName: "a.edi", value: ""}), "file"},
			{"empty file name", good("file", part{name: "file", fileName: "", value: "data"}), "file"},
			{"neither target nor source", good("target"), "target"},
			{"no from", good("from"), "from"},
			{"unknown party", good("to", part{name: "to", value: "nobody"}), "to"},
			{"invalid party", good("to", part{name: "to", value: "ACME"}), "to"},
			{"missing target", good("target", part{name: "target", value: "nope"}), "target"},
			{"source as target", good("target", part{name: "target", value: "outbox"}), "target"},
			{"target as source", good("target", part{name: "source", value: "inbox"}), "source"},
			{"unknown field", good("", part{name: "priority", value: "high"}), "priority"},
			{"field twice", good("", part{name: "to", value: "acme"}), "to"},
			{"control character in correlation id", good("", part{name: "correlation_id", value: "a\x01b"}), "correlation_id"},
			{"unprintable origin event id", good("", part{name: "origin_event_id", value: "a\u200bb"}), "origin_event_id"},
			{"correlation id over 255 bytes", good("", part{name: "correlation_id", value: strings.Repeat("x", 256)}), "correlation_id"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before := b.messageCount()
				r := b.upload(tt.parts)
				if r.status != 400 {
					t.Fatalf("status %d %s", r.status, r.body)
				}
				if e := r.errorOf(t); e.Code != "INVALID_INPUT" || e.Details[tt.field] == nil {
					t.Errorf("error %+v, want %s named", e, tt.field)
				}
				if b.messageCount() != before {
					t.Error("a refused upload was stored")
				}
			})
		}

		t.Run("strict media type", func(t *testing.T) {
			body, ct := multipartBody(t, good(""))
			if r := b.send("POST", "/api/v1/messages", body, ct); r.status != 400 || r.errorOf(t).Details["X-Requested-With"] == nil {
				t.Errorf("without X-Requested-With: %d %s", r.status, r.body)
			}
			if r := b.do("POST", "/api/v1/messages", `{"from":"local"}`, withHeader("X-Requested-With", "x")); r.status != 415 {
				t.Errorf("as JSON: %d", r.status)
			}
		})

		t.Run("size limit", func(t *testing.T) {
			b.must(200, "PUT", "/api/v1/settings", `{"max_upload_mib":"1"}`)
			defer b.must(200, "PUT", "/api/v1/settings", `{"max_upload_mib":"100"}`)
			spool := t.TempDir()
			t.Setenv("TMPDIR", spool)
			blobs := dirEntries(t, filepath.Join(b.dir, "blobs"))
			before := b.messageCount()
			r := b.upload(good("file", part{name: "file", fileName: "big.bin", value: strings.Repeat("x", 1<<20+1)}))
			if r.status != 413 || r.errorOf(t).Code != "PAYLOAD_TOO_LARGE" {
				t.Fatalf("oversized: %d %s", r.status, r.body)
			}
			if b.messageCount() != before {
				t.Error("an oversized upload was stored")
			}
			if got := dirEntries(t, filepath.Join(b.dir, "blobs")); got != blobs {
				t.Errorf("blobs %d before, %d after", blobs, got)
			}
			if got := dirEntries(t, spool); got != 0 {
				t.Errorf("%d spooled files left behind", got)
			}
			b.sendTo(t, "inbox", "local", "acme", "exact.bin", strings.Repeat("x", 1<<20))
		})
	})
}

func TestMessageQueries(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		b.must(201, "POST", "/api/v1/routes", `{"source":"outbox","from":"acme","to":"local","target":"archive"}`)
		start := time.Now().Add(-time.Minute).UTC()
		m1 := b.sendTo(t, "inbox", "local", "acme", "invoice-1.edi", "one")
		m2 := b.sendTo(t, "inbox", "acme", "local", "order-2.xml", "two, longer")
		r := b.upload([]part{{name: "from", value: "acme"}, {name: "to", value: "local"}, {name: "source", value: "outbox"},
			{name: "origin_event_id", value: "evt-99"}, {name: "file", fileName: "routed.csv", value: "3"}})
		if r.status != 201 {
			t.Fatalf("send: %d %s", r.status, r.body)
		}
		var m3 messageDetail
		r.json(t, &m3)

		type list struct {
			Messages []persistence.Message `json:"messages"`
			Total    int                   `json:"total"`
			Limit    int                   `json:"limit"`
			Offset   int                   `json:"offset"`
		}
		ids := func(l list) string {
			var s []string
			for _, m := range l.Messages {
				s = append(s, fmt.Sprint(m.ID))
			}
			return strings.Join(s, ",")
		}
		all := fmt.Sprintf("%d,%d,%d", m1.ID, m2.ID, m3.ID)
		tests := []struct {
			query string
			want  []int64
		}{
			{"", []int64{m1.ID, m2.ID, m3.ID}},
			{"from=acme", []int64{m2.ID, m3.ID}},
			{"to=acme", []int64{m1.ID}},
			{"source=outbox", []int64{m3.ID}},
			{"source=manual", []int64{m1.ID, m2.ID}},
			{"status=in_progress", []int64{m1.ID, m2.ID, m3.ID}},
			{"status=delivered", nil},
			{"q=order", []int64{m2.ID}},
			{"q=evt-99", []int64{m3.ID}},
			{"since=" + url.QueryEscape(start.Format(time.RFC3339)), []int64{m1.ID, m2.ID, m3.ID}},
			{"until=" + url.QueryEscape(start.Format(time.RFC3339)), nil},
			{"from=acme&to=local&q=routed", []int64{m3.ID}},
		}
		for _, tt := range tests {
			t.Run(tt.query, func(t *testing.T) {
				var l list
				b.must(200, "GET", "/api/v1/messages?"+tt.query, "").json(t, &l)
				got := map[int64]bool{}
				for _, m := range l.Messages {
					got[m.ID] = true
				}
				if len(got) != len(tt.want) || l.Total != len(tt.want) {
					t.Fatalf("got %s (total %d), want %v", ids(l), l.Total, tt.want)
				}
				for _, id := range tt.want {
					if !got[id] {
						t.Fatalf("got %s, want %v", ids(l), tt.want)
					}
				}
			})
		}
		var l list
		b.must(200, "GET", "/api/v1/messages?limit=2&offset=1", "").json(t, &l)
		if l.Total != 3 || l.Limit != 2 || l.Offset != 1 || len(l.Messages) != 2 {
			t.Errorf("page: %+v (all %s)", l, all)
		}

		for _, bad := range []struct{ query, param string }{
			{"status=lost", "status"},
			{"from=ACME", "from"},
			{"to=a%20b", "to"},
			{"source=no%2Fpe", "source"},
			{"since=yesterday", "since"},
			{"until=2026-13-01T00:00:00Z", "until"},
			{"limit=-1", "limit"},
			{"offset=x", "offset"},
			{"colour=red", "colour"},
			{"status=error&status=stalled", "status"},
			{"q=" + strings.Repeat("x", 201), "q"},
		} {
			if e := b.must(400, "GET", "/api/v1/messages?"+bad.query, "").errorOf(t); e.Details[bad.param] == nil {
				t.Errorf("%s: %+v", bad.query, e)
			}
		}

		t.Run("detail", func(t *testing.T) {
			var raw map[string]any
			r := b.must(200, "GET", fmt.Sprintf("/api/v1/messages/%d", m1.ID), "")
			r.json(t, &raw)
			for _, k := range []string{"id", "stage", "status", "from", "to", "source", "original_file_name", "size", "sha256",
				"correlation_id", "origin_event_id", "created_at", "updated_at", "deliveries", "history", "payloads", "protocols"} {
				if _, ok := raw[k]; !ok {
					t.Errorf("detail lacks %s", k)
				}
			}
			var d messageDetail
			r.json(t, &d)
			if len(d.Payloads) != 1 || d.Payloads[0].Stage != persistence.PayloadUnpacked || d.Payloads[0].Size != 3 {
				t.Errorf("payloads %+v", d.Payloads)
			}
			if len(d.History) == 0 {
				t.Error("no history")
			}
			for _, dl := range raw["deliveries"].([]any) {
				for _, k := range []string{"id", "target", "state", "attempts", "next_attempt_at", "last_error"} {
					if _, ok := dl.(map[string]any)[k]; !ok {
						t.Errorf("delivery lacks %s", k)
					}
				}
			}
			b.must(404, "GET", "/api/v1/messages/999999", "")
			b.must(400, "GET", "/api/v1/messages/x", "")
		})

		t.Run("payload", func(t *testing.T) {
			r := b.must(200, "GET", fmt.Sprintf("/api/v1/messages/%d/payload", m2.ID), "")
			if string(r.body) != "two, longer" {
				t.Errorf("body %q", r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/octet-stream" {
				t.Errorf("Content-Type %q", ct)
			}
			if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename=order-2.xml` {
				t.Errorf("Content-Disposition %q", cd)
			}
			if r.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no nosniff")
			}
			r = b.must(200, "GET", fmt.Sprintf("/api/v1/messages/%d/payload?stage=unpacked", m1.ID), "")
			if string(r.body) != "one" {
				t.Errorf("body %q", r.body)
			}
			b.must(404, "GET", fmt.Sprintf("/api/v1/messages/%d/payload?stage=receipt", m1.ID), "")
			if e := b.must(400, "GET", fmt.Sprintf("/api/v1/messages/%d/payload?stage=raw", m1.ID), "").errorOf(t); e.Details["stage"] == nil {
				t.Errorf("bad stage: %+v", e)
			}
			b.must(404, "GET", "/api/v1/messages/999999/payload", "")
		})
	})
}

func TestRedispatchAndRedeliver(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		ctx := context.Background()
		b.must(201, "POST", "/api/v1/routes", `{"source":"outbox","from":"local","to":"acme","target":"inbox"}`)
		r := b.upload([]part{{name: "from", value: "local"}, {name: "to", value: "acme"}, {name: "source", value: "outbox"},
			{name: "file", fileName: "a.edi", value: "a"}})
		if r.status != 201 {
			t.Fatalf("send: %d %s", r.status, r.body)
		}
		var m messageDetail
		r.json(t, &m)
		other := b.sendTo(t, "archive", "local", "acme", "b.edi", "b")

		// A new route; redispatch adds its delivery.
		b.must(201, "POST", "/api/v1/routes", `{"source":"outbox","from":"*","to":"acme","target":"archive"}`)
		var d messageDetail
		b.must(200, "POST", fmt.Sprintf("/api/v1/messages/%d/redispatch", m.ID), "").json(t, &d)
		targets := map[persistence.InstanceName]bool{}
		for _, dl := range d.Deliveries {
			targets[dl.Target] = true
		}
		if !targets["inbox"] || !targets["archive"] || len(d.Deliveries) != 2 {
			t.Errorf("after redispatch: %+v", d.Deliveries)
		}
		b.must(200, "POST", fmt.Sprintf("/api/v1/messages/%d/redispatch", m.ID), "{}")
		b.must(400, "POST", fmt.Sprintf("/api/v1/messages/%d/redispatch", m.ID), `{"force":true}`)
		if r := b.do("POST", fmt.Sprintf("/api/v1/messages/%d/redispatch", m.ID), "x", withContentType("text/plain")); r.status != 415 {
			t.Errorf("redispatch as text/plain: %d", r.status)
		}
		b.must(404, "POST", "/api/v1/messages/999999/redispatch", "")

		// Fail the inbox delivery through a claim, then redeliver it.
		claims, err := b.store.ClaimDeliveries(ctx, "inbox", 10, time.Minute, time.Now())
		if err != nil || len(claims) != 1 || claims[0].Message.ID != m.ID {
			t.Fatalf("claim: %v %+v", err, claims)
		}
		c := claims[0]
		res, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken,
			Kind: persistence.OutcomeFailed, Reason: "disk full", At: time.Now()}})
		if err != nil || res[0] != nil {
			t.Fatalf("complete: %v %v", err, res)
		}
		path := fmt.Sprintf("/api/v1/messages/%d/deliveries/%d/redeliver", m.ID, c.Delivery.ID)
		// The resend choice is checked before anything changes.
		if e := b.must(400, "POST", path, `{"resend":"twice"}`).errorOf(t); !strings.Contains(e.Message, "resend") {
			t.Errorf("unknown resend mode: %+v", e)
		}
		b.must(400, "POST", path, `{"resend":"new_message","force":true}`)
		b.must(200, "POST", path, `{"resend":"new_message"}`).json(t, &d)
		for _, dl := range d.Deliveries {
			if dl.ID == c.Delivery.ID && dl.State != persistence.DeliveryQueued {
				t.Errorf("after redeliver: %+v", dl)
			}
		}
		found := false
		for _, h := range d.History {
			if h.Kind == persistence.HistoryRedeliverRequested && h.Actor == "token:tester" && h.Reason == persistence.ResendNew.Reason() {
				found = true
			}
		}
		if !found {
			t.Errorf("no redeliver line naming the token: %+v", d.History)
		}
		// Queued now: not redeliverable.
		if e := b.must(409, "POST", path, "").errorOf(t); e.Code != "NOT_REDELIVERABLE" {
			t.Errorf("code %s", e.Code)
		}
		// A delivery of another message is not found under this one.
		b.must(404, "POST", fmt.Sprintf("/api/v1/messages/%d/deliveries/%d/redeliver", other.ID, c.Delivery.ID), "")
		b.must(404, "POST", fmt.Sprintf("/api/v1/messages/%d/deliveries/999999/redeliver", m.ID), "")
	})
}

func dirEntries(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(entries)
}
