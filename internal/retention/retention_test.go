package retention_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/retention"
)

// insertAt stores a message from acme to local with no route (settled at once), which
// writes its history lines at the clock's time.
func insertAt(t *testing.T, s *db.Store, id int64) {
	t.Helper()
	ctx := context.Background()
	body := fmt.Sprintf("document %d", id)
	_, err := s.InsertMessages(ctx, []persistence.NewMessage{{
		Message: persistence.Message{ID: id, From: "acme", To: "local", Source: "poller",
			OriginalFileName: persistence.FileName(fmt.Sprintf("order-%d.edi", id)), Size: int64(len(body)),
			SHA256: "0000000000000000000000000000000000000000000000000000000000000000", CorrelationID: "c", OriginEventID: "e"},
		Dispatch: true,
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// The check of issue 14 on PostgreSQL: history rows of three months land in three
// partitions; pruning exports and drops the oldest; the message says what was pruned.
func TestHistoryMonthsArchivedAndDropped(t *testing.T) {
	ctx := context.Background()
	c := dbtest.NewClock(time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC))
	s := openStore(t, db.DialectPostgres, c)
	lines := map[int64]int{}
	for i, month := range []time.Month{time.January, time.February, time.March} {
		c.Set(time.Date(2026, month, 15, 10, 0, 0, 0, time.UTC))
		insertAt(t, s, int64(i+1))
		h, err := s.ListHistory(ctx, int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		lines[int64(i+1)] = len(h)
	}
	parts, err := s.HistoryPartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 3 {
		t.Fatalf("partitions %v, want January to March at least", parts)
	}
	for i, p := range parts[:3] {
		if p.Start.Month() != time.Month(i+1) || p.Rows != int64(lines[int64(i+1)]) {
			t.Errorf("partition %s from %s holds %d rows, want %d of month %d", p.Name, p.Start, p.Rows, lines[int64(i+1)], i+1)
		}
	}

	// 60 days before 20 April is 19 February: January has expired, February has not.
	now := time.Date(2026, 4, 20, 0, 0, 0, 0, time.UTC)
	c.Set(now)
	blobs := newBlobs(t)
	job := retention.New(s, blobs, slog.New(slog.DiscardHandler), func(context.Context) persistence.Retention {
		return persistence.Retention{PayloadDays: 0, HistoryDays: 60}
	})
	job.Pause, job.Now = 0, c.Now
	rep, err := job.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Archives) != 1 || rep.Archives[0] != "history/2026-01.jsonl.gz" {
		t.Fatalf("archives %v, want history/2026-01.jsonl.gz", rep.Archives)
	}

	// The archive holds January's rows as JSON lines.
	r, err := blobs.Open(ctx, rep.Archives[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	zr, err := gzip.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	n := 0
	for sc.Scan() {
		var line struct {
			MessageID int64  `json:"message_id"`
			Kind      string `json:"kind"`
			At        time.Time
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		if line.MessageID != 1 || line.Kind == "" {
			t.Errorf("line %d = %s, want a line of message 1", n+1, sc.Bytes())
		}
		n++
	}
	if n != lines[1] {
		t.Errorf("archive holds %d lines, want %d", n, lines[1])
	}

	// The partition is gone; February and March stay, with months ahead of April.
	parts, err = s.HistoryPartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if parts[0].Start.Month() != time.February || parts[1].Start.Month() != time.March {
		t.Errorf("partitions after pruning %v, want February first", parts)
	}
	if last := parts[len(parts)-1]; last.Start.Before(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("last partition starts %s, want June (two months ahead)", last.Start)
	}

	// The message says what was pruned.
	pruned, err := s.PrunedFor(ctx, []int64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	p := pruned[1]
	if p.HistoryPrunedBefore == nil || !p.HistoryPrunedBefore.Equal(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) ||
		len(p.ArchiveKeys) != 1 || p.ArchiveKeys[0] != rep.Archives[0] {
		t.Errorf("PrunedFor(1) = %+v, want history before 1 February archived in %s", p, rep.Archives[0])
	}
	if _, ok := pruned[2]; ok {
		t.Errorf("PrunedFor(2) = %+v, want nothing pruned", pruned[2])
	}
	if h, err := s.ListHistory(ctx, 1); err != nil || len(h) != 0 {
		t.Errorf("history of message 1 = %v, %v; want none", h, err)
	}
}

// Lines written in a month without its partition land in the default partition and move
// into the month's partition when it is created.
func TestStragglersMoveIntoTheirMonth(t *testing.T) {
	ctx := context.Background()
	c := dbtest.NewClock(time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC))
	s := openStore(t, db.DialectPostgres, c)
	c.Set(time.Date(2026, 7, 2, 10, 0, 0, 0, time.UTC)) // January to March exist
	insertAt(t, s, 1)
	h, err := s.ListHistory(ctx, 1)
	if err != nil || len(h) == 0 {
		t.Fatalf("history %v, %v", h, err)
	}
	if err := s.EnsureHistoryPartitions(ctx, c.Now(), 1); err != nil {
		t.Fatal(err)
	}
	parts, err := s.HistoryPartitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := parts[len(parts)-1]
	if last.Start != time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC) || last.Rows != int64(len(h)) {
		t.Errorf("last partition %+v, want July with the %d lines", last, len(h))
	}
	if again, err := s.ListHistory(ctx, 1); err != nil || len(again) != len(h) {
		t.Errorf("history after the move: %d lines, %v; want %d", len(again), err, len(h))
	}
}
