package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// downstreamLines are a message's downstream status lines as "status by actor".
func downstreamLines(t *testing.T, s *db.Store, msg int64) []persistence.HistoryEntry {
	t.Helper()
	var out []persistence.HistoryEntry
	for _, h := range history(t, s, msg) {
		if h.Kind == persistence.HistoryDownstreamStatus {
			out = append(out, h)
		}
	}
	return out
}

func TestApplyCallbacks(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cb := func(id, status string, min int) persistence.StatusCallback {
		return persistence.StatusCallback{Target: writer, WebhookID: id, Status: status, ReportedAt: t0.Add(time.Duration(min) * time.Minute)}
	}
	tests := []struct {
		name        string
		callbacks   []persistence.StatusCallback
		want        []persistence.CallbackOutcome
		wantLines   int
		wantState   persistence.DeliveryState
		wantError   string
		wantFolded  string
		wantMessage persistence.MessageStatus
	}{
		{name: "intermediate statuses only add history",
			callbacks: []persistence.StatusCallback{cb("a", "received", 1), cb("b", "validated", 2)},
			want:      []persistence.CallbackOutcome{persistence.CallbackApplied, persistence.CallbackApplied},
			wantLines: 2, wantState: persistence.DeliveryAwaitingAck, wantFolded: "validated", wantMessage: persistence.StatusAwaitingReceipt},
		{name: "the same webhook-id writes once",
			callbacks: []persistence.StatusCallback{cb("a", "received", 1), cb("a", "received", 1), cb("a", "processed", 1)},
			want:      []persistence.CallbackOutcome{persistence.CallbackApplied, persistence.CallbackDuplicate, persistence.CallbackDuplicate},
			wantLines: 1, wantState: persistence.DeliveryAwaitingAck, wantFolded: "received", wantMessage: persistence.StatusAwaitingReceipt},
		{name: "processed settles a handoff as delivered, out of order with received",
			callbacks: []persistence.StatusCallback{cb("b", "processed", 5), cb("a", "received", 1)},
			want:      []persistence.CallbackOutcome{persistence.CallbackApplied, persistence.CallbackApplied},
			wantLines: 2, wantState: persistence.DeliveryDelivered, wantFolded: "processed", wantMessage: persistence.StatusDelivered},
		{name: "rejected fails the delivery with its reason, and stands",
			callbacks: []persistence.StatusCallback{
				{Target: writer, WebhookID: "r", Status: "rejected", Reason: "unknown article", Detail: "line 3", ReportedAt: t0},
				cb("p", "processed", 9)},
			want:      []persistence.CallbackOutcome{persistence.CallbackApplied, persistence.CallbackApplied},
			wantLines: 2, wantState: persistence.DeliveryFailed, wantError: "unknown article (line 3)", wantFolded: "rejected", wantMessage: persistence.StatusError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEach(t, func(t *testing.T, s *db.Store) {
				d, msg := awaiting(t, s, "job-1", time.Now().Add(time.Hour))
				cbs := make([]persistence.StatusCallback, len(tc.callbacks))
				for i, c := range tc.callbacks {
					c.ExternalRef = "job-1"
					if i%2 == 1 {
						c.ExternalRef, c.DeliveryID = "", d.ID
					}
					cbs[i] = c
				}
				got := must1[[]persistence.CallbackOutcome](t)(s.ApplyCallbacks(context.Background(), cbs))
				for i := range tc.want {
					if got[i] != tc.want[i] {
						t.Fatalf("outcomes = %v, want %v", got, tc.want)
					}
				}
				lines := downstreamLines(t, s, msg)
				if len(lines) != tc.wantLines {
					t.Fatalf("%d downstream lines, want %d: %+v", len(lines), tc.wantLines, lines)
				}
				for _, l := range lines {
					if l.Actor != "callback:writer" || l.ReportedAt == nil || l.DeliveryID == nil || *l.DeliveryID != d.ID {
						t.Fatalf("line %+v", l)
					}
				}
				after := wantState(t, s, d.ID, tc.wantState)
				if after.LastError != tc.wantError {
					t.Fatalf("last_error = %q, want %q", after.LastError, tc.wantError)
				}
				if m := message(t, s, msg); m.Status != tc.wantMessage {
					t.Fatalf("message is %s, want %s", m.Status, tc.wantMessage)
				}
				ds := deliveriesOf(t, s, msg)
				persistence.AttachDownstream(ds, history(t, s, msg))
				if ds[0].Downstream == nil || ds[0].Downstream.Status != tc.wantFolded {
					t.Fatalf("downstream = %+v, want %s", ds[0].Downstream, tc.wantFolded)
				}
				// Applying the same callbacks again (a replay of the spool) writes nothing.
				n := len(history(t, s, msg))
				again := must1[[]persistence.CallbackOutcome](t)(s.ApplyCallbacks(context.Background(), cbs))
				for _, o := range again {
					if o != persistence.CallbackDuplicate {
						t.Fatalf("replayed outcomes = %v", again)
					}
				}
				if m := len(history(t, s, msg)); m != n {
					t.Fatalf("a replay wrote %d history lines", m-n)
				}
			})
		})
	}
}

func TestApplyCallbacksUnmatchedAndInvalid(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		m := insert(t, s, 1, writer)[0]
		before := len(history(t, s, m.ID))
		got := must1[[]persistence.CallbackOutcome](t)(s.ApplyCallbacks(ctx, []persistence.StatusCallback{
			{Target: writer, WebhookID: "x", ExternalRef: "nobody", Status: "received", ReportedAt: time.Now()},
			{Target: writer, WebhookID: "y", DeliveryID: 999999, Status: "received", ReportedAt: time.Now()},
			// The message's delivery by message id: applied.
			{Target: writer, WebhookID: "z", MessageID: m.ID, Status: "received", ReportedAt: time.Now()},
		}))
		if got[0] != persistence.CallbackUnmatched || got[1] != persistence.CallbackUnmatched || got[2] != persistence.CallbackApplied {
			t.Fatalf("outcomes = %v", got)
		}
		if n := len(history(t, s, m.ID)) - before; n != 1 {
			t.Fatalf("%d history lines, want 1", n)
		}
		_, err := s.ApplyCallbacks(ctx, []persistence.StatusCallback{{Target: writer, WebhookID: "w", DeliveryID: 1, Status: "Not A Status"}})
		var fe *persistence.FieldError
		if !errors.As(err, &fe) || fe.Field != "status" {
			t.Fatalf("invalid status: %v", err)
		}
	})
}

func TestDownstreamFromReceipts(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		// A synchronous MDN comes back with the attempt's outcome.
		m := insert(t, s, 1, writer)[0]
		c := claimAll(t, s, writer, time.Now())[0].Delivery
		partnerTime := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
		must(t, complete(t, s, persistence.Completion{DeliveryID: c.ID, Token: c.ClaimToken, Kind: persistence.OutcomeDelivered,
			Downstream: []persistence.DownstreamReport{{MessageID: m.ID, DeliveryID: c.ID, Status: persistence.DownstreamProcessed,
				Reporter: persistence.DownstreamActorMDN, ReportedAt: partnerTime}}})[0])
		lines := downstreamLines(t, s, m.ID)
		if len(lines) != 1 || lines[0].ToState != "processed" || lines[0].Actor != "mdn" || !lines[0].ReportedAt.Equal(partnerTime) {
			t.Fatalf("sync MDN lines = %+v", lines)
		}

		// An asynchronous MDN settles an awaiting delivery; a later one never downgrades.
		d, msg := awaiting(t, s, "", time.Now().Add(time.Hour))
		got := must1[persistence.Delivery](t)(s.SettleReceipt(ctx, persistence.DownstreamReport{DeliveryID: d.ID,
			Status: persistence.DownstreamFailed, Reason: "processed/error: decryption-failed", Reporter: persistence.DownstreamActorMDN}))
		if got.State != persistence.DeliveryFailed || got.LastError != "processed/error: decryption-failed" {
			t.Fatalf("after a negative MDN: %+v", got)
		}
		got = must1[persistence.Delivery](t)(s.SettleReceipt(ctx, persistence.DownstreamReport{DeliveryID: d.ID,
			Status: persistence.DownstreamProcessed, Reporter: persistence.DownstreamActorMDN}))
		if got.State != persistence.DeliveryFailed {
			t.Fatalf("a later positive MDN changed the delivery: %+v", got)
		}
		lines = downstreamLines(t, s, msg)
		if len(lines) != 2 {
			t.Fatalf("async MDN lines = %+v", lines)
		}
		if ds, _ := persistence.DownstreamStatus(lines); ds.Status != "failed" || !ds.Final {
			t.Fatalf("folded = %+v", ds)
		}
		checkInvariants(t, s)
	})
}

func TestCallbackSecrets(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		before := len(auditEvents(t, s))
		a := must1[persistence.CallbackSecret](t)(s.CreateCallbackSecret(ctx, writer, []byte("sealed-a")))
		b := must1[persistence.CallbackSecret](t)(s.CreateCallbackSecret(ctx, writer, []byte("sealed-b")))
		if _, err := s.CreateCallbackSecret(ctx, "nosuch", []byte("x")); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("secret of a missing instance: %v", err)
		}
		must(t, s.TouchCallbackSecret(ctx, a))
		must(t, s.RevokeCallbackSecret(ctx, writer, b.ID))
		must(t, s.RevokeCallbackSecret(ctx, writer, b.ID)) // again: nothing changes
		if err := s.RevokeCallbackSecret(ctx, "reader", a.ID); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("revoke through another target: %v", err)
		}
		list := must1[[]persistence.CallbackSecret](t)(s.ListCallbackSecrets(ctx, writer))
		if len(list) != 2 || list[0].ID != a.ID || list[0].LastUsedAt == nil || list[0].RevokedAt != nil ||
			list[1].RevokedAt == nil || string(list[0].Sealed) != "sealed-a" {
			t.Fatalf("secrets = %+v", list)
		}
		events := auditEvents(t, s)[before:]
		if len(events) != 3 {
			t.Fatalf("audit events = %+v", events)
		}
		for _, e := range events {
			if e.Kind != "callback_secret" || e.RecordName != "writer" {
				t.Fatalf("audit event %+v", e)
			}
			for _, c := range e.Changes {
				if c.Path == "secret" && (!c.Secret || c.New != nil) {
					t.Fatalf("secret audited by value: %+v", c)
				}
			}
		}
	})
}
