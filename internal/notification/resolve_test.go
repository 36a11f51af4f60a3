package notification

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/module"
)

// unresolved lists the unresolved alerts of code.
func (b *bundle) unresolved(code alert.Code) []alert.Alert {
	b.t.Helper()
	out, _, err := b.rt.ListAlerts(context.Background(), Filter{Code: code, Unresolved: true, Limit: maxLimit})
	if err != nil {
		b.t.Fatal(err)
	}
	return out
}

// A resolution marks the alerts of its dedupe key resolved, with its time, and leaves
// other alerts alone; hearing it again changes nothing.
func TestResolutionMarksAlertsOfItsKeyResolved(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		b.accept(failed(1))
		b.accept(failed(2))
		if got := len(b.unresolved(alert.MessageFailed)); got != 2 {
			t.Fatalf("%d unresolved alerts, want 2", got)
		}
		b.advance(time.Minute)
		res := alert.Resolution(alert.MessageFailed, alert.Subject{Kind: "message", ID: "1"})
		b.accept(res)
		b.accept(res)
		open := b.unresolved(alert.MessageFailed)
		if len(open) != 1 || open[0].Subject.ID != "2" {
			t.Fatalf("unresolved after resolving message 1: %+v", open)
		}
		all, _, err := b.rt.ListAlerts(context.Background(), Filter{Code: alert.MessageFailed, Limit: maxLimit})
		if err != nil {
			t.Fatal(err)
		}
		var resolved int
		for _, a := range all {
			if a.ResolvedAt != nil {
				resolved++
				if a.Subject.ID != "1" || !a.ResolvedAt.Equal(b.now().Truncate(time.Microsecond)) {
					t.Fatalf("resolved alert %+v at %v, want message 1 at %v", a.Subject, a.ResolvedAt, b.now())
				}
			}
		}
		if resolved != 1 || len(all) != 2 {
			t.Fatalf("%d of %d alerts resolved, want 1 of 2", resolved, len(all))
		}
		// A resolution is no alert of its own: nothing more is recorded.
		if _, total, _ := b.rt.ListAlerts(context.Background(), Filter{}); total != 2 {
			t.Fatalf("%d alerts recorded, want 2", total)
		}
		// The same cause coming back is a new alert, unresolved.
		b.advance(time.Minute)
		b.accept(failed(1))
		if got := len(b.unresolved(alert.MessageFailed)); got != 2 {
			t.Fatalf("%d unresolved after message 1 failed again, want 2", got)
		}
	})
}

// downSQL is the module's database that refuses every transaction while down is set.
type downSQL struct {
	module.SQL
	down atomic.Bool
}

var errDown = errors.New("connection refused")

func (d *downSQL) Read(ctx context.Context, fn func(tx module.Tx) error) error {
	if d.down.Load() {
		return errDown
	}
	return d.SQL.Read(ctx, fn)
}

func (d *downSQL) Write(ctx context.Context, fn func(tx module.Tx) error) error {
	if d.down.Load() {
		return errDown
	}
	return d.SQL.Write(ctx, fn)
}

// Alerts heard while the database is out of reach are held in memory and recorded, in
// the order heard, once it answers: the database_unavailable alert is recorded after the
// outage, and its resolution after it.
func TestAlertsHeardDuringAnOutageAreRecordedAfterIt(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		sqlDB := &downSQL{SQL: b.store.ModuleSQL()}
		b.rt.db, b.rt.q.DB = sqlDB, sqlDB
		ctx := context.Background()
		sqlDB.down.Store(true)
		subject := alert.Subject{Kind: "database", Name: "database"}
		raised := alert.Alert{Code: alert.DatabaseUnavailable, Subject: subject, Summary: "The database does not answer"}
		b.rt.hear(ctx, raised)
		b.rt.hear(ctx, alert.Resolution(alert.DatabaseUnavailable, subject))
		b.rt.recordHeld(ctx)
		if n := b.rt.Held(); n != 2 {
			t.Fatalf("%d alerts held during the outage, want 2", n)
		}
		sqlDB.down.Store(false)
		b.rt.recordHeld(ctx)
		if n := b.rt.Held(); n != 0 {
			t.Fatalf("%d alerts still held after the outage", n)
		}
		all, total, err := b.rt.ListAlerts(ctx, Filter{Code: alert.DatabaseUnavailable})
		if err != nil {
			t.Fatal(err)
		}
		if total != 1 || all[0].ResolvedAt == nil {
			t.Fatalf("after the outage: %d alerts, %+v; want one, resolved", total, all)
		}
	})
}

// A runtime that only listens (a plugin process of a distributed installation) retries
// the alerts it holds on its own, without the summaries the API process runs.
func TestListeningRuntimeRecordsHeldAlertsAfterAnOutage(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		sqlDB := &downSQL{SQL: b.store.ModuleSQL()}
		b.rt.db, b.rt.q.DB = sqlDB, sqlDB
		ctx := context.Background()
		if err := b.rt.Listen(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.rt.Stop(ctx) })
		sqlDB.down.Store(true)
		subject := alert.Subject{Kind: "database", Name: "database"}
		b.rt.hear(ctx, alert.Alert{Code: alert.DatabaseUnavailable, Subject: subject, Summary: "The database does not answer"})
		if n := b.rt.Held(); n != 1 {
			t.Fatalf("%d alerts held during the outage, want 1", n)
		}
		sqlDB.down.Store(false)
		deadline := time.Now().Add(10 * time.Second)
		for b.rt.Held() > 0 {
			if time.Now().After(deadline) {
				t.Fatal("the held alert was not recorded within 10 s of the database answering")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, total, err := b.rt.ListAlerts(ctx, Filter{Code: alert.DatabaseUnavailable}); err != nil || total != 1 {
			t.Fatalf("after the outage: %d alerts (%v), want 1", total, err)
		}
	})
}
