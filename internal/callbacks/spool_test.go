package callbacks

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/alert/alerttest"
	"wharf/internal/persistence"
)

// gatedStore hands each batch to the test, which answers it, until it is down: then it
// fails every batch at once.
type gatedStore struct {
	calls chan []persistence.StatusCallback
	reply chan error
	mu    sync.Mutex
	down  bool
}

func (g *gatedStore) ApplyCallbacks(_ context.Context, cbs []persistence.StatusCallback) ([]persistence.CallbackOutcome, error) {
	g.mu.Lock()
	down := g.down
	g.mu.Unlock()
	if down {
		return nil, persistence.ErrUnavailable
	}
	g.calls <- slices.Clone(cbs)
	if err := <-g.reply; err != nil {
		return nil, err
	}
	out := make([]persistence.CallbackOutcome, len(cbs))
	for i := range out {
		out[i] = persistence.CallbackApplied
	}
	return out, nil
}

func callback(id string) persistence.StatusCallback {
	return persistence.StatusCallback{Target: "erp", WebhookID: id, DeliveryID: 1, Status: "received",
		ReportedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func ids(cbs []persistence.StatusCallback) []string {
	out := make([]string, len(cbs))
	for i, c := range cbs {
		out[i] = c.WebhookID
	}
	return out
}

// TestSpoolKeepsWhatIsNotApplied: callbacks accepted while a batch is being applied stay
// in the journal when the batch before them is trimmed, and a reopened spool has exactly
// them, in order.
func TestSpoolKeepsWhatIsNotApplied(t *testing.T) {
	dir := t.TempDir()
	st := &gatedStore{calls: make(chan []persistence.StatusCallback), reply: make(chan error)}
	sp, err := Open(dir, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sp.Start()
	ctx := context.Background()
	if err := sp.Append(ctx, callback("a")); err != nil {
		t.Fatal(err)
	}
	if got := ids(<-st.calls); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first batch %v", got)
	}
	for _, id := range []string{"b", "c"} {
		if err := sp.Append(ctx, callback(id)); err != nil {
			t.Fatal(err)
		}
	}
	st.reply <- nil // "a" applied; the journal is trimmed to b, c
	if got := ids(<-st.calls); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("second batch %v", got)
	}
	// The database goes away before b and c are applied.
	st.mu.Lock()
	st.down = true
	st.mu.Unlock()
	st.reply <- persistence.ErrUnavailable
	if err := sp.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	again, err := Open(dir, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(again.pending); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("reopened journal holds %v, want [b c]", got)
	}
	if err := again.f.Close(); err != nil {
		t.Fatal(err)
	}
}

// refusingStore refuses any batch holding webhook-id "bad" as the store refuses invalid
// input, finds no delivery for "stray", and applies the rest.
type refusingStore struct {
	mu      sync.Mutex
	applied []string
}

func (r *refusingStore) ApplyCallbacks(_ context.Context, cbs []persistence.StatusCallback) ([]persistence.CallbackOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cbs {
		if c.WebhookID == "bad" {
			return nil, &persistence.FieldError{Field: "status", Message: "invalid"}
		}
	}
	out := make([]persistence.CallbackOutcome, len(cbs))
	for i, c := range cbs {
		if c.WebhookID == "stray" {
			out[i] = persistence.CallbackUnmatched
			continue
		}
		r.applied = append(r.applied, c.WebhookID)
		out[i] = persistence.CallbackApplied
	}
	return out, nil
}

// TestSpoolDropsWhatTheStoreRefuses: one callback the store refuses does not hold up the
// others, and leaves the journal with the rest; it and one that names no delivery are
// alerts, not only log lines.
func TestSpoolDropsWhatTheStoreRefuses(t *testing.T) {
	dir := t.TempDir()
	st := &refusingStore{}
	sp, err := Open(dir, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	alerts := &alerttest.Recorder{}
	sp.Alerts = alerts
	// Journaled before the worker runs, so the four go in one batch.
	for _, id := range []string{"a", "bad", "stray", "c"} {
		line, err := encodeLine(callback(id))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sp.f.Write(line); err != nil {
			t.Fatal(err)
		}
		sp.pending = append(sp.pending, callback(id))
	}
	if n, err := sp.applyOnce(context.Background()); err != nil || n != 4 {
		t.Fatalf("applyOnce = %d, %v", n, err)
	}
	if !slices.Equal(st.applied, []string{"a", "c"}) || sp.Pending() != 0 {
		t.Fatalf("applied %v, %d pending", st.applied, sp.Pending())
	}
	if fi, err := os.Stat(filepath.Join(dir, JournalName)); err != nil || fi.Size() != 0 {
		t.Fatalf("journal after applying: %v, %v", fi, err)
	}
	var unapplied []string
	for _, a := range alerts.Alerts() {
		if a.Code == alert.StatusCallbackUnapplied && a.Subject.ID == "erp" {
			unapplied = append(unapplied, a.Details[0].Value)
		}
	}
	slices.Sort(unapplied)
	if !slices.Equal(unapplied, []string{"bad", "stray"}) {
		t.Fatalf("alerts of callbacks not applied: %v (all: %v)", unapplied, alerts.Codes())
	}
	if err := sp.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestJournalStopsAtATornLine: a journal is read up to its first line that does not
// check (a crash during an append), which is cut away.
func TestJournalStopsAtATornLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalName)
	var data []byte
	for _, id := range []string{"a", "b"} {
		line, err := encodeLine(callback(id))
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, line...)
	}
	good := len(data)
	bad, _ := encodeLine(callback("c"))
	bad[3] ^= 1 // a checksum that no longer matches
	data = append(data, bad...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(dir, &refusingStore{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.f.Close()
	if got := ids(sp.pending); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("pending %v", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != int64(good) {
		t.Fatalf("journal size %v, want %d (%v)", fi.Size(), good, err)
	}
}
