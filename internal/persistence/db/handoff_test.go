package db_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// awaiting claims one new delivery of writer and records it awaiting_ack with ref, due by
// deadline; it returns the delivery and its message id.
func awaiting(t *testing.T, s *db.Store, ref string, deadline time.Time) (persistence.Delivery, int64) {
	t.Helper()
	m := insert(t, s, 1, writer)[0]
	c := claimAll(t, s, writer, time.Now())[0].Delivery
	errs := complete(t, s, persistence.Completion{DeliveryID: c.ID, Token: c.ClaimToken,
		Kind: persistence.OutcomeAwaitingAck, AckDeadline: deadline, ExternalRef: ref})
	must(t, errs[0])
	d := wantState(t, s, c.ID, persistence.DeliveryAwaitingAck)
	if d.ExternalRef != ref {
		t.Fatalf("external_ref = %q, want %q", d.ExternalRef, ref)
	}
	return d, m.ID
}

func TestSettleHandoff(t *testing.T) {
	tests := []struct {
		name       string
		report     persistence.HandoffReport
		wantState  persistence.DeliveryState
		wantStatus persistence.MessageStatus
		wantReason string
		wantError  string
	}{
		{"complete", persistence.HandoffReport{Completed: true, Text: "booked", Actor: "token:erp"},
			persistence.DeliveryDelivered, persistence.StatusDelivered, "completion reported for reference job-1: booked", ""},
		{"complete with the reference", persistence.HandoffReport{Completed: true, Reference: "job-1", Actor: "token:erp"},
			persistence.DeliveryDelivered, persistence.StatusDelivered, "completion reported for reference job-1", ""},
		{"fail", persistence.HandoffReport{Text: "unknown article\n 4711", Actor: "token:erp"},
			persistence.DeliveryFailed, persistence.StatusError, "failure reported for reference job-1: unknown article 4711", "unknown article 4711"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEach(t, func(t *testing.T, s *db.Store) {
				d, msg := awaiting(t, s, "job-1", time.Now().Add(time.Hour))
				before := len(history(t, s, msg))
				r := tc.report
				r.DeliveryID = d.ID
				got := must1[persistence.Delivery](t)(s.SettleHandoff(context.Background(), r))
				if got.State != tc.wantState || got.LastError != tc.wantError || got.AckDeadline != nil || got.ExternalRef != "job-1" {
					t.Fatalf("settled = %+v", got)
				}
				wantStatus(t, s, msg, persistence.StageSettled, tc.wantStatus)
				h := history(t, s, msg)[before:]
				var line *persistence.HistoryEntry
				for i := range h {
					if h[i].Kind == persistence.HistoryDeliveryChanged {
						line = &h[i]
					}
				}
				if line == nil || line.Reason != tc.wantReason || line.Actor != "token:erp" ||
					line.FromState != "awaiting_ack" || line.ToState != string(tc.wantState) {
					t.Fatalf("history after the report = %+v", h)
				}

				// A second report of either kind is refused and writes nothing.
				n := len(history(t, s, msg))
				for _, again := range []bool{true, false} {
					_, err := s.SettleHandoff(context.Background(), persistence.HandoffReport{
						DeliveryID: d.ID, Completed: again, Text: "again", Actor: "token:erp"})
					wantErr(t, err, persistence.ErrDeliverySettled)
				}
				if after := len(history(t, s, msg)); after != n {
					t.Fatalf("history grew from %d to %d lines on refused reports", n, after)
				}
				if d := delivery(t, s, d.ID); d.State != tc.wantState || d.LastError != tc.wantError {
					t.Fatalf("refused report changed the delivery: %+v", d)
				}
				checkInvariants(t, s)
			})
		})
	}
}

func TestSettleHandoffRefusals(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		d, msg := awaiting(t, s, "job-7", time.Now().Add(time.Hour))
		n := len(history(t, s, msg))
		_, err := s.SettleHandoff(ctx, persistence.HandoffReport{DeliveryID: d.ID, Completed: true, Reference: "job-8"})
		wantErr(t, err, persistence.ErrReferenceMismatch)
		_, err = s.SettleHandoff(ctx, persistence.HandoffReport{DeliveryID: d.ID, Text: " \n "})
		wantField(t, err, "reason")
		_, err = s.SettleHandoff(ctx, persistence.HandoffReport{DeliveryID: d.ID + 1000, Completed: true})
		wantErr(t, err, persistence.ErrNotFound)
		if got := len(history(t, s, msg)); got != n {
			t.Fatalf("refused reports wrote %d history lines", got-n)
		}
		wantState(t, s, d.ID, persistence.DeliveryAwaitingAck)

		// A delivery that awaits nothing: queued, then delivering.
		m := insert(t, s, 1, spare)[0]
		q := deliveriesOf(t, s, m.ID)[0]
		_, err = s.SettleHandoff(ctx, persistence.HandoffReport{DeliveryID: q.ID, Completed: true})
		wantErr(t, err, persistence.ErrDeliveryNotAwaiting)
		claimAll(t, s, spare, time.Now())
		_, err = s.SettleHandoff(ctx, persistence.HandoffReport{DeliveryID: q.ID, Completed: true})
		wantErr(t, err, persistence.ErrDeliveryNotAwaiting)
		wantState(t, s, q.ID, persistence.DeliveryDelivering)
		checkInvariants(t, s)
	})
}

func TestHandoffPastItsDeadline(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		deadline := time.Now().Add(time.Hour)
		d, msg := awaiting(t, s, "job-9", deadline)
		got := must1[[]persistence.Delivery](t)(s.ExpireAcks(ctx, deadline.Add(time.Second), 10))
		const want = "handoff job-9 not completed before the deadline"
		if len(got) != 1 || got[0].State != persistence.DeliveryFailed || got[0].LastError != want {
			t.Fatalf("ExpireAcks = %+v", got)
		}
		h := history(t, s, msg)
		if last := h[len(h)-1]; !strings.Contains(last.Reason+h[len(h)-2].Reason, want) {
			t.Fatalf("history does not name the handoff: %+v", h)
		}
		n := len(h)
		_, err := s.SettleHandoff(ctx, persistence.HandoffReport{DeliveryID: d.ID, Completed: true})
		wantErr(t, err, persistence.ErrDeliverySettled)
		if len(history(t, s, msg)) != n {
			t.Fatal("a late completion wrote history")
		}
		wantStatus(t, s, msg, persistence.StageSettled, persistence.StatusError)
		checkInvariants(t, s)
	})
}

func TestAwaitingAckRefusesABadReference(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		insert(t, s, 1, writer)
		c := claimAll(t, s, writer, time.Now())[0].Delivery
		for _, ref := range []string{"with space", strings.Repeat("x", persistence.MaxExternalRefBytes+1), "tab\there", "ümlaut"} {
			_, err := s.CompleteDeliveries(context.Background(), []persistence.Completion{{DeliveryID: c.ID, Token: c.ClaimToken,
				Kind: persistence.OutcomeAwaitingAck, AckDeadline: time.Now().Add(time.Hour), ExternalRef: ref}})
			wantField(t, err, "external_ref")
		}
		wantState(t, s, c.ID, persistence.DeliveryDelivering)
	})
}

func TestScopedAPIToken(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		tk := must1[persistence.APIToken](t)(s.CreateScopedAPIToken(ctx, "erp", hashOf("erp-secret"), writer))
		if tk.Target != writer {
			t.Fatalf("created %+v", tk)
		}
		found := must1[persistence.APIToken](t)(s.FindAPIToken(ctx, hashOf("erp-secret")))
		if found.Target != writer {
			t.Fatalf("found %+v", found)
		}
		plain := must1[persistence.APIToken](t)(s.CreateAPIToken(ctx, "ops", hashOf("ops-secret")))
		if plain.Target != "" {
			t.Fatalf("unscoped token has scope %q", plain.Target)
		}
		_, err := s.CreateScopedAPIToken(ctx, "bad", hashOf("bad-secret"), "Not An Instance")
		wantField(t, err, "target")
		var scoped []audit.Event
		for _, e := range auditEvents(t, s) {
			if e.Kind == "api_token" && e.RecordID == "erp" {
				scoped = append(scoped, e)
			}
		}
		if len(scoped) != 1 || !slices.ContainsFunc(scoped[0].Changes, func(c audit.Change) bool {
			return c.Path == "target" && string(c.New) == `"writer"`
		}) {
			t.Fatalf("audit of the scoped token = %+v", scoped)
		}
	})
}

// An ordered session waits behind a delivery that awaits a completion report, goes on
// after a completion, and stays blocked after a reported failure or an expired deadline.
func TestSessionWaitsBehindAHandoff(t *testing.T) {
	tests := []struct {
		name    string
		settle  func(s *db.Store, d persistence.Delivery, deadline time.Time) error
		goesOn  bool
		wantEnd persistence.DeliveryState
	}{
		{"completed", func(s *db.Store, d persistence.Delivery, _ time.Time) error {
			_, err := s.SettleHandoff(context.Background(), persistence.HandoffReport{DeliveryID: d.ID, Completed: true})
			return err
		}, true, persistence.DeliveryDelivered},
		{"failed", func(s *db.Store, d persistence.Delivery, _ time.Time) error {
			_, err := s.SettleHandoff(context.Background(), persistence.HandoffReport{DeliveryID: d.ID, Text: "rejected"})
			return err
		}, false, persistence.DeliveryFailed},
		{"past its deadline", func(s *db.Store, _ persistence.Delivery, deadline time.Time) error {
			_, err := s.ExpireAcks(context.Background(), deadline.Add(time.Second), 10)
			return err
		}, false, persistence.DeliveryFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			forEach(t, func(t *testing.T, s *db.Store) {
				ctx := context.Background()
				now := time.Now()
				deadline := now.Add(time.Hour)
				msgs := insert(t, s, 2, writer)
				var ds []persistence.Delivery
				for _, m := range msgs {
					d := deliveriesOf(t, s, m.ID)[0]
					must(t, db.ExecRaw(ctx, s, `UPDATE deliveries SET session_key = 'erp' WHERE id = ?`, d.ID))
					ds = append(ds, d)
				}
				first := claimAll(t, s, writer, now)
				if !slices.Equal(claimIDs(first), []int64{ds[0].ID}) {
					t.Fatalf("claimed %v, want the head of the session %d", claimIDs(first), ds[0].ID)
				}
				c := first[0].Delivery
				must(t, complete(t, s, persistence.Completion{DeliveryID: c.ID, Token: c.ClaimToken,
					Kind: persistence.OutcomeAwaitingAck, AckDeadline: deadline, ExternalRef: "job-1"})[0])
				if got := claimAll(t, s, writer, now); len(got) != 0 {
					t.Fatalf("claimed %v behind a delivery awaiting its report", claimIDs(got))
				}
				must(t, tc.settle(s, c, deadline))
				wantState(t, s, c.ID, tc.wantEnd)
				got := claimAll(t, s, writer, now)
				switch {
				case tc.goesOn && !slices.Equal(claimIDs(got), []int64{ds[1].ID}):
					t.Fatalf("after the report claimed %v, want %d", claimIDs(got), ds[1].ID)
				case !tc.goesOn && len(got) != 0:
					t.Fatalf("claimed %v behind a failed handoff", claimIDs(got))
				}
				checkInvariants(t, s)
			})
		})
	}
}
