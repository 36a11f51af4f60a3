package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
)

// handingOff sends a document by hand to target and records its attempt as accepted by
// an in-house system with ref, as a target's handoff answer would; it returns the delivery.
func (b *bundle) handingOff(t *testing.T, target, ref string, deadline time.Time) persistence.Delivery {
	t.Helper()
	d := b.sendTo(t, target, "local", "acme", "order.edi", "UNA")
	ctx := context.Background()
	claims, err := b.store.ClaimDeliveries(ctx, persistence.InstanceName(target), 10, time.Minute, time.Now())
	if err != nil || len(claims) != 1 || claims[0].Message.ID != d.ID {
		t.Fatalf("claim = %+v, %v", claims, err)
	}
	c := claims[0].Delivery
	errs, err := b.store.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: c.ID, Token: c.ClaimToken,
		Kind: persistence.OutcomeAwaitingAck, AckDeadline: deadline, ExternalRef: ref}})
	if err != nil || errs[0] != nil {
		t.Fatalf("complete = %v, %v", errs, err)
	}
	return c
}

func (b *bundle) historyLen(t *testing.T, messageID int64) int {
	t.Helper()
	h, err := b.store.ListHistory(context.Background(), messageID)
	if err != nil {
		t.Fatal(err)
	}
	return len(h)
}

// TestHandoffSettlement completes and fails handoffs over REST: each settles once, with a
// history line naming the token; a second report, of either kind, is 409 and writes
// nothing.
func TestHandoffSettlement(t *testing.T) {
	tests := []struct {
		name, action, body string
		state              persistence.DeliveryState
		status             persistence.MessageStatus
		lastError          string
	}{
		{"complete without a body", "complete", "", persistence.DeliveryDelivered, persistence.StatusDelivered, ""},
		{"complete with a note and the reference", "complete", `{"note":"booked as 4711","reference":"job-1"}`,
			persistence.DeliveryDelivered, persistence.StatusDelivered, ""},
		{"fail with a reason", "fail", `{"reason":"unknown article 0815\nin line 3"}`,
			persistence.DeliveryFailed, persistence.StatusError, "unknown article 0815 in line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, b *bundle) {
				b.seed()
				erp := b.newScopedToken(t, "erp", "inbox")
				d := b.handingOff(t, "inbox", "job-1", time.Now().Add(time.Hour))
				path := fmt.Sprintf("/api/v1/deliveries/%d/%s", d.ID, tt.action)
				r := b.must(200, "POST", path, tt.body, withToken(erp))
				var got persistence.Delivery
				r.json(t, &got)
				if got.ID != d.ID || got.State != tt.state || got.LastError != tt.lastError || got.ExternalRef != "job-1" {
					t.Fatalf("answer = %+v", got)
				}
				m, err := b.store.GetMessage(context.Background(), d.MessageID)
				if err != nil || m.Status != tt.status {
					t.Fatalf("message = %+v, %v; want status %s", m, err, tt.status)
				}
				h, _ := b.store.ListHistory(context.Background(), d.MessageID)
				var line persistence.HistoryEntry
				for _, e := range h {
					if e.Kind == persistence.HistoryDeliveryChanged && e.ToState == string(tt.state) {
						line = e
					}
				}
				if line.Actor != "token:erp" || !strings.Contains(line.Reason, "reference job-1") {
					t.Fatalf("history line of the report = %+v", line)
				}

				n := b.historyLen(t, d.MessageID)
				for _, again := range []struct{ action, body string }{{"complete", ""}, {"fail", `{"reason":"late"}`}} {
					r := b.do("POST", fmt.Sprintf("/api/v1/deliveries/%d/%s", d.ID, again.action), again.body, withToken(erp))
					if r.status != 409 || r.errorOf(t).Code != "DELIVERY_SETTLED" {
						t.Fatalf("second %s = %d %s, want 409 DELIVERY_SETTLED", again.action, r.status, r.body)
					}
				}
				if after := b.historyLen(t, d.MessageID); after != n {
					t.Fatalf("refused reports wrote %d history lines", after-n)
				}
			})
		})
	}
}

func (b *bundle) newScopedToken(t *testing.T, name, target string) string {
	t.Helper()
	r := b.must(201, "POST", "/api/v1/tokens", fmt.Sprintf(`{"name":%q,"target":%q}`, name, target))
	var created struct {
		Name   string `json:"name"`
		Target string `json:"target"`
		Token  string `json:"token"`
	}
	r.json(t, &created)
	if created.Name != name || created.Target != target || !strings.HasPrefix(created.Token, "wharf_") {
		t.Fatalf("created token = %s", r.body)
	}
	return created.Token
}

// TestHandoffRefusals holds every refusal of a report: nothing is written by any.
func TestHandoffRefusals(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		erp := b.newScopedToken(t, "erp", "inbox")
		d := b.handingOff(t, "inbox", "job-7", time.Now().Add(time.Hour))
		other := b.sendTo(t, "archive", "local", "acme", "other.edi", "x").Deliveries[0]
		n := b.historyLen(t, d.MessageID)
		long := strings.Repeat("x", persistence.MaxReasonBytes+1)
		tests := []struct {
			name, path, body string
			token            string
			status           int
			code             string
		}{
			{"fail without a reason", "fail", "", erp, 400, "INVALID_INPUT"},
			{"fail with a blank reason", "fail", `{"reason":" \n "}`, erp, 400, "INVALID_INPUT"},
			{"a reason too long", "fail", `{"reason":"` + long + `"}`, erp, 400, "INVALID_INPUT"},
			{"a note too long", "complete", `{"note":"` + long + `"}`, erp, 400, "INVALID_INPUT"},
			{"a note on a failure", "fail", `{"reason":"x","note":"y"}`, erp, 400, "INVALID_INPUT"},
			{"an unknown field", "complete", `{"status":"done"}`, erp, 400, "INVALID_INPUT"},
			{"a bad reference", "complete", `{"reference":"job 7"}`, erp, 400, "INVALID_INPUT"},
			{"another reference", "complete", `{"reference":"job-8"}`, erp, 409, "REFERENCE_MISMATCH"},
			{"no such delivery", "/api/v1/deliveries/999999/complete", "", erp, 404, "NOT_FOUND"},
			{"a delivery not awaiting", fmt.Sprintf("/api/v1/deliveries/%d/complete", other.ID), "", b.token, 409, "DELIVERY_NOT_AWAITING"},
			{"a scoped token and another target", fmt.Sprintf("/api/v1/deliveries/%d/complete", other.ID), "", erp, 403, "TOKEN_OUT_OF_SCOPE"},
		}
		for _, tt := range tests {
			path := tt.path
			if !strings.HasPrefix(path, "/") {
				path = fmt.Sprintf("/api/v1/deliveries/%d/%s", d.ID, tt.path)
			}
			r := b.do("POST", path, tt.body, withToken(tt.token))
			if r.status != tt.status || r.errorOf(t).Code != tt.code {
				t.Errorf("%s: %d %s, want %d %s", tt.name, r.status, r.body, tt.status, tt.code)
			}
		}
		if got := b.historyLen(t, d.MessageID); got != n {
			t.Errorf("refused reports wrote %d history lines", got-n)
		}
		if got, _ := b.store.GetDelivery(context.Background(), d.ID); got.State != persistence.DeliveryAwaitingAck {
			t.Errorf("delivery after refusals = %+v", got)
		}
		if got, _ := b.store.GetDelivery(context.Background(), other.ID); got.State != persistence.DeliveryQueued {
			t.Errorf("other target's delivery after refusals = %+v", got)
		}
	})
}

// TestScopedTokenReachesNothingElse holds that a scoped token is refused every other
// route with 403, while an unscoped token works as before.
func TestScopedTokenReachesNothingElse(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		erp := b.newScopedToken(t, "erp", "inbox")
		for _, rt := range (&Server{}).routes() {
			if rt.public || rt.scoped {
				continue
			}
			path := strings.NewReplacer("{id}", "1", "{name}", "inbox", "{type}", "file-writer",
				"{delivery_id}", "1").Replace(rt.path)
			r := b.do(rt.method, path, "", withToken(erp))
			if r.status != 403 || r.errorOf(t).Code != "TOKEN_OUT_OF_SCOPE" {
				t.Errorf("%s %s with a scoped token = %d %s, want 403 TOKEN_OUT_OF_SCOPE", rt.method, path, r.status, r.body)
			}
		}
		b.must(200, "GET", "/api/v1/routes", "")
		r := b.must(200, "GET", "/api/v1/tokens", "")
		if !strings.Contains(string(r.body), `"target":"inbox"`) {
			t.Errorf("token list does not show the scope: %s", r.body)
		}
	})
}

// TestTokensREST creates, lists and revokes tokens, and refuses a scope that is not a
// target instance.
func TestTokensREST(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		tok := b.newScopedToken(t, "erp", "inbox")
		for _, tt := range []struct{ body, field string }{
			{`{"name":"x","target":"outbox"}`, "target"},
			{`{"name":"x","target":"nowhere"}`, "target"},
			{`{"name":"Bad Name"}`, "name"},
		} {
			r := b.do("POST", "/api/v1/tokens", tt.body)
			if r.status != 400 || !strings.Contains(string(r.body), `"`+tt.field+`"`) {
				t.Errorf("create %s = %d %s, want 400 naming %s", tt.body, r.status, r.body, tt.field)
			}
		}
		if r := b.do("POST", "/api/v1/tokens", `{"name":"erp"}`); r.status != 409 || r.errorOf(t).Code != "NAME_TAKEN" {
			t.Errorf("a taken name = %d %s", r.status, r.body)
		}
		b.must(204, "POST", "/api/v1/tokens/erp/revoke", "")
		if r := b.do("POST", "/api/v1/deliveries/1/complete", "", withToken(tok)); r.status != 401 {
			t.Errorf("revoked token = %d %s, want 401", r.status, r.body)
		}
		b.must(404, "POST", "/api/v1/tokens/nobody/revoke", "")
	})
}

// TestHandoffSettlesOnceUnderRace sends completions and failures of one delivery at the
// same time: exactly one settles it, every other is DELIVERY_SETTLED, and the history
// holds one settlement.
func TestHandoffSettlesOnceUnderRace(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		d := b.handingOff(t, "inbox", "job-1", time.Now().Add(time.Hour))
		const n = 8
		type answer struct {
			status int
			code   string
		}
		answers := make(chan answer, n)
		for i := range n {
			action, body := "complete", ""
			if i%2 == 1 {
				action, body = "fail", `{"reason":"rejected"}`
			}
			go func() {
				r := b.do("POST", fmt.Sprintf("/api/v1/deliveries/%d/%s", d.ID, action), body)
				a := answer{status: r.status}
				if r.status != 200 {
					a.code = r.errorOf(t).Code
				}
				answers <- a
			}()
		}
		ok := 0
		for range n {
			a := <-answers
			switch {
			case a.status == 200:
				ok++
			case a.status != 409 || a.code != "DELIVERY_SETTLED":
				t.Errorf("answer %d %s, want 200 once and 409 DELIVERY_SETTLED otherwise", a.status, a.code)
			}
		}
		if ok != 1 {
			t.Errorf("%d reports settled the delivery, want 1", ok)
		}
		h, err := b.store.ListHistory(context.Background(), d.MessageID)
		if err != nil {
			t.Fatal(err)
		}
		settled := 0
		for _, e := range h {
			if e.Kind == persistence.HistoryDeliveryChanged && e.FromState == "awaiting_ack" {
				settled++
			}
		}
		if settled != 1 {
			t.Errorf("%d settlement lines in the history, want 1", settled)
		}
	})
}
