package db_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// openAt opens a fresh store of the dialect on clock, with the fixture loaded.
func openAt(t *testing.T, dialect string, clock *dbtest.Clock) *db.Store {
	t.Helper()
	opt := db.Options{AuditKey: dbtest.AuditKey, Now: clock.Now, Logger: slog.New(slog.DiscardHandler)}
	if dialect == db.DialectSQLite {
		opt.SQLitePath = filepath.Join(t.TempDir(), "wharf.db")
	} else {
		opt.URL = dbtest.PostgresURL(t)
	}
	s, err := db.Open(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	fixture(t, s)
	return s
}

func days(n int) *int { return &n }

func TestPrunePayloadsInBatches(t *testing.T) {
	start := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		global     int
		acme       *int // acme's own payload retention
		wantPruned int
	}{
		{"global", 30, nil, 7},
		{"global keeps for ever", 0, nil, 0},
		{"partner keeps longer", 30, days(60), 0},
		{"partner keeps for ever", 30, days(0), 0},
		{"partner keeps shorter", 0, days(20), 7},
	} {
		for _, dialect := range dbtest.Dialects() {
			t.Run(tc.name+"/"+dialect, func(t *testing.T) {
				clock := dbtest.NewClock(start)
				s := openAt(t, dialect, clock)
				ctx := context.Background()
				settled := insert(t, s, 7)
				open := insert(t, s, 1, writer)[0]
				if tc.acme != nil {
					must1[persistence.PartyRetention](t)(s.SetPartyRetention(ctx, persistence.PartyRetention{
						Kind: persistence.PartyPartner, Name: acme, PayloadDays: tc.acme}))
				}
				now := start.Add(40 * 24 * time.Hour)
				clock.Set(now)
				var keys []string
				pruned, batches := 0, 0
				var cur db.PruneCursor
				for {
					k, n, next, err := s.PrunePayloads(ctx, now, tc.global, cur, 3)
					must(t, err)
					if next == cur {
						break
					}
					keys, pruned, cur = append(keys, k...), pruned+n, next
					batches++
				}
				if pruned != tc.wantPruned || len(keys) != tc.wantPruned {
					t.Fatalf("pruned %d messages with %d keys, want %d", pruned, len(keys), tc.wantPruned)
				}
				if tc.wantPruned > 0 && batches != 3 {
					t.Errorf("%d batches of at most 3, want 3", batches)
				}
				got := must1[map[int64]persistence.Pruned](t)(s.PrunedFor(ctx, []int64{settled[0].ID, open.ID}))
				if tc.wantPruned == 0 {
					if len(got) != 0 {
						t.Errorf("PrunedFor = %v, want nothing", got)
					}
					return
				}
				if p := got[settled[0].ID]; p.PayloadsPrunedAt == nil || !p.PayloadsPrunedAt.Equal(now) {
					t.Errorf("payloads pruned at %v, want %v", p.PayloadsPrunedAt, now)
				}
				if _, ok := got[open.ID]; ok {
					t.Errorf("the unsettled message was pruned")
				}
				if ps := must1[[]persistence.Payload](t)(s.ListPayloads(ctx, settled[3].ID)); len(ps) != 0 {
					t.Errorf("payload records left: %v", ps)
				}
				if ps := must1[[]persistence.Payload](t)(s.ListPayloads(ctx, open.ID)); len(ps) != 1 {
					t.Errorf("the unsettled message has %d payload records, want 1", len(ps))
				}
				message(t, s, settled[0].ID) // the row stays
			})
		}
	}
}

func TestPruneHistoryInBatches(t *testing.T) {
	start := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		global int
		acme   *int
		// wantGone tells whether the batches remove the lines: on PostgreSQL the global
		// retention is left to whole-month partition drops.
		wantGone map[string]bool
	}{
		{"global", 30, nil, map[string]bool{db.DialectSQLite: true, db.DialectPostgres: false}},
		{"partner shorter", 90, days(20), map[string]bool{db.DialectSQLite: true, db.DialectPostgres: true}},
		{"partner for ever", 30, days(0), map[string]bool{db.DialectSQLite: false, db.DialectPostgres: false}},
	} {
		for _, dialect := range dbtest.Dialects() {
			t.Run(tc.name+"/"+dialect, func(t *testing.T) {
				clock := dbtest.NewClock(start)
				s := openAt(t, dialect, clock)
				ctx := context.Background()
				msgs := insert(t, s, 4)
				before := len(history(t, s, msgs[0].ID))
				if tc.acme != nil {
					must1[persistence.PartyRetention](t)(s.SetPartyRetention(ctx, persistence.PartyRetention{
						Kind: persistence.PartyPartner, Name: acme, HistoryDays: tc.acme}))
				}
				now := start.Add(40 * 24 * time.Hour)
				clock.Set(now)
				total, batches := 0, 0
				for {
					n := must1[int](t)(s.PruneHistory(ctx, now, tc.global, 5))
					total += n
					if n < 5 {
						break
					}
					batches++
				}
				if !tc.wantGone[dialect] {
					if total != 0 {
						t.Fatalf("pruned %d lines, want none", total)
					}
					return
				}
				if total != 4*before || batches != 4*before/5 {
					t.Fatalf("pruned %d lines in %d full batches, want %d in %d", total, batches, 4*before, 4*before/5)
				}
				if h := history(t, s, msgs[0].ID); len(h) != 0 {
					t.Errorf("history left: %v", kinds(h))
				}
				p := must1[map[int64]persistence.Pruned](t)(s.PrunedFor(ctx, []int64{msgs[0].ID}))[msgs[0].ID]
				if p.HistoryPrunedBefore == nil || !p.HistoryPrunedBefore.After(start) {
					t.Errorf("history pruned before %v, want after %v", p.HistoryPrunedBefore, start)
				}
			})
		}
	}
}

func TestDailyCountsOutlivePruning(t *testing.T) {
	for _, dialect := range dbtest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			start := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
			clock := dbtest.NewClock(start)
			s := openAt(t, dialect, clock)
			ctx := context.Background()
			insert(t, s, 3)
			clock.Set(start.Add(24 * time.Hour))
			insert(t, s, 2)
			insert(t, s, 1, writer)
			now := start.Add(60 * 24 * time.Hour)
			clock.Set(now)
			must1[time.Time](t)(s.RollupDailyCounts(ctx, now))
			before := must1[[]persistence.DayCount](t)(s.CountMessagesPerDay(ctx, start.Add(-24*time.Hour)))
			var cur db.PruneCursor
			for {
				_, _, next, err := s.PrunePayloads(ctx, now, 1, cur, 500)
				must(t, err)
				if next == cur {
					break
				}
				cur = next
			}
			for must1[int](t)(s.PruneHistory(ctx, now, 1, 500)) > 0 {
			}
			after := must1[[]persistence.DayCount](t)(s.CountMessagesPerDay(ctx, start.Add(-24*time.Hour)))
			want := []persistence.DayCount{
				{Day: time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC), Status: persistence.StatusNotRouted, Count: 3, Bytes: 3 * int64(len("document 1"))},
				{Day: time.Date(2026, 1, 11, 0, 0, 0, 0, time.UTC), Status: persistence.StatusInProgress, Count: 1, Bytes: int64(len("document 6"))},
				{Day: time.Date(2026, 1, 11, 0, 0, 0, 0, time.UTC), Status: persistence.StatusNotRouted, Count: 2, Bytes: 2 * int64(len("document 4"))},
			}
			if !slices.Equal(before, want) || !slices.Equal(after, want) {
				t.Fatalf("counts before pruning %v, after %v, want %v", before, after, want)
			}
		})
	}
}

func TestListHistoryRange(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		msgs := insert(t, s, 3)
		all := 0
		for _, m := range msgs {
			all += len(history(t, s, m.ID))
		}
		now := time.Now()
		got := must1[[]persistence.HistoryEntry](t)(s.ListHistoryRange(ctx, now.Add(-time.Hour), now.Add(time.Hour), 0, 1000))
		if len(got) != all {
			t.Fatalf("%d lines in the range, want %d", len(got), all)
		}
		page := must1[[]persistence.HistoryEntry](t)(s.ListHistoryRange(ctx, now.Add(-time.Hour), now.Add(time.Hour), got[1].ID, 2))
		if len(page) != 2 || page[0].ID != got[2].ID {
			t.Errorf("page after %d = %v, want lines from %d", got[1].ID, page, got[2].ID)
		}
		if old := must1[[]persistence.HistoryEntry](t)(s.ListHistoryRange(ctx, now.Add(-48*time.Hour), now.Add(-24*time.Hour), 0, 1000)); len(old) != 0 {
			t.Errorf("%d lines a day ago, want none", len(old))
		}
		_, err := s.ListHistoryRange(ctx, now, now.Add(40*24*time.Hour), 0, 10)
		wantField(t, err, "to")
	})
}
