package gateway

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/bus"
	"wharf/internal/logging"
)

// logsPair is a process whose ring answers on the bus, and a second client of the same
// bus reading it as the API process does.
func logsPair(t *testing.T) (*slog.Logger, processLogs, *Gateway) {
	t.Helper()
	b, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ring := logging.NewRing(1000, slog.LevelDebug)
	owner := &Gateway{Bus: b, holder: "p1", logs: ring, log: slog.New(slog.DiscardHandler)}
	srv, err := owner.serveLogs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	reader := &Gateway{Bus: b, holder: "api", log: slog.New(slog.DiscardHandler)}
	return slog.New(ring.Handler()), processLogs{reader}, owner
}

func TestLogsTailOverTheBus(t *testing.T) {
	log, pl, _ := logsPair(t)
	for i := range 300 {
		log.Info("line", "n", i)
	}
	log.Warn("disk almost full")
	log.Info("big", "blob", strings.Repeat("x", 100<<10))
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		level     slog.Level
		text      string
		limit     int
		wantCount int
		wantFirst string
	}{
		{"count is bounded", slog.LevelDebug, "line", 1000, maxTailRecords, "line"},
		{"level filter", slog.LevelWarn, "", 10, 1, "disk almost full"},
		{"text filter", slog.LevelDebug, "n=299", 10, 1, "line"},
		{"limit", slog.LevelDebug, "", 5, 5, "big"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pl.Tail(ctx, "p1", tc.level, tc.text, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.wantCount || got[0].Message != tc.wantFirst {
				t.Fatalf("got %d records, first %+v; want %d, first %q", len(got), got[0], tc.wantCount, tc.wantFirst)
			}
		})
	}
	// Bytes are bounded too: three records of 100 KiB do not fit one reply.
	log.Info("big", "blob", strings.Repeat("y", 100<<10))
	log.Info("big", "blob", strings.Repeat("z", 100<<10))
	got, err := pl.Tail(ctx, "p1", slog.LevelDebug, "big", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("%d records of 100 KiB in one reply, want 2 (bounded to %d bytes)", len(got), maxTailBytes)
	}
	if _, err := pl.Tail(ctx, "gone", slog.LevelDebug, "", 10); err == nil {
		t.Error("a process nobody answers for gave no error")
	}
}

// TestLogsLivePublishesOnlyWhileFollowed: new records go out on the bus once someone
// follows the process, and not before.
func TestLogsLivePublishesOnlyWhileFollowed(t *testing.T) {
	b, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ring := logging.NewRing(100, slog.LevelDebug)
	log := slog.New(ring.Handler())
	owner := &Gateway{Bus: b, holder: "p1", logs: ring, log: slog.New(slog.DiscardHandler)}
	ls, err := owner.answerLogs() // steps run by hand, not by the publisher
	if err != nil {
		t.Fatal(err)
	}
	pl := processLogs{&Gateway{Bus: b, holder: "api", log: slog.New(slog.DiscardHandler)}}

	log.Info("unwatched")
	if n := ls.step(); n != 0 {
		t.Fatalf("%d records published while nobody followed", n)
	}
	wake, cancel, err := pl.Watch(context.Background(), "p1")
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	// Watch renews the interest at once; the step sees it once the request came.
	deadline := time.Now().Add(10 * time.Second)
	for ls.asked.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Watch never asked the process")
		}
		time.Sleep(10 * time.Millisecond) // polling the request's arrival, with the deadline above
	}
	log.Info("watched one")
	log.Info("watched two")
	if n := ls.step(); n != 2 {
		t.Fatalf("%d records published while followed, want the 2 new ones (not the unwatched one)", n)
	}
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatal("the follower was not woken by the published records")
	}
}

// The publisher skips what nobody follows and sends a follower's new records in a batch.
func TestLogsPublisherSendsOnlyFollowedRecords(t *testing.T) {
	log, pl, owner := logsPair(t)
	var batches atomic.Int64
	sub, err := owner.Bus.Subscribe(logsLiveSubject("p1"), func(string, []byte) { batches.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	log.Info("unwatched")
	got, err := pl.Tail(context.Background(), "p1", slog.LevelDebug, "", 10) // asks, so the process is followed from here
	if err != nil || len(got) != 1 {
		t.Fatalf("tail: %v, %v; want the one record", got, err)
	}
	if n := batches.Load(); n != 0 {
		t.Fatalf("%d batches published before anyone followed", n)
	}
	log.Info("watched")
	deadline := time.Now().Add(10 * time.Second)
	for batches.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the followed record was not published within 10 s")
		}
		time.Sleep(10 * time.Millisecond) // polling the publisher, with the deadline above
	}
}
