package db_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// statsFixture inserts messages at chosen times and statuses: in_progress (dispatched to
// writer), received (not dispatched) and not_routed (dispatched to nothing).
func statsFixture(t *testing.T, s *db.Store, now time.Time) {
	t.Helper()
	ctx := context.Background()
	type row struct {
		age    time.Duration
		status persistence.MessageStatus
	}
	rows := []row{
		{10 * time.Minute, persistence.StatusInProgress},
		{70 * time.Minute, persistence.StatusInProgress},
		{70 * time.Minute, persistence.StatusReceived},
		{80 * time.Minute, persistence.StatusInProgress},
		{23*time.Hour + 59*time.Minute, persistence.StatusNotRouted},
		{24 * time.Hour, persistence.StatusReceived}, // the window's bound is inclusive
		{25 * time.Hour, persistence.StatusInProgress},
		{6 * 24 * time.Hour, persistence.StatusNotRouted},
		{8 * 24 * time.Hour, persistence.StatusInProgress},
		{30 * 24 * time.Hour, persistence.StatusReceived},
	}
	first := must1[int64](t)(s.AllocateMessageIDs(ctx, len(rows)))
	batch := make([]persistence.NewMessage, len(rows))
	for i, r := range rows {
		var nm persistence.NewMessage
		switch r.status {
		case persistence.StatusInProgress:
			nm = newMessage(first+int64(i), true, writer)
		case persistence.StatusReceived:
			nm = newMessage(first+int64(i), false)
		case persistence.StatusNotRouted:
			nm = newMessage(first+int64(i), true)
		}
		nm.Message.CreatedAt = now.Add(-r.age)
		batch[i] = nm
	}
	got := must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch))
	for i, m := range got {
		if m.Status != rows[i].status {
			t.Fatalf("fixture message %d has status %s, want %s", i, m.Status, rows[i].status)
		}
	}
}

func TestCountMessagesByStatus(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		now := time.Date(2026, 3, 10, 12, 30, 0, 0, time.UTC)
		ctx := context.Background()
		if got := must1[[]persistence.StatusCount](t)(s.CountMessagesByStatus(ctx, now)); len(got) != 0 {
			t.Fatalf("empty store counts %v", got)
		}
		statsFixture(t, s, now)
		got := must1[[]persistence.StatusCount](t)(s.CountMessagesByStatus(ctx, now.Add(-24*time.Hour), now.Add(-7*24*time.Hour)))
		want := []persistence.StatusCount{
			{Status: persistence.StatusInProgress, Total: 5, Since: []int{3, 4}},
			{Status: persistence.StatusNotRouted, Total: 2, Since: []int{1, 2}},
			{Status: persistence.StatusReceived, Total: 3, Since: []int{2, 2}},
		}
		if !slices.EqualFunc(got, want, func(a, b persistence.StatusCount) bool {
			return a.Status == b.Status && a.Total == b.Total && slices.Equal(a.Since, b.Since)
		}) {
			t.Fatalf("counts = %+v, want %+v", got, want)
		}
		// No window: totals only.
		got = must1[[]persistence.StatusCount](t)(s.CountMessagesByStatus(ctx))
		if len(got) != 3 || got[0].Total != 5 || len(got[0].Since) != 0 {
			t.Fatalf("totals only = %+v", got)
		}
	})
}

func TestCountMessagesPerHour(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		now := time.Date(2026, 3, 10, 12, 30, 0, 0, time.UTC)
		statsFixture(t, s, now)
		got := must1[[]persistence.HourCount](t)(s.CountMessagesPerHour(context.Background(), now.Add(-24*time.Hour)))
		h := func(hour int, day int) time.Time { return time.Date(2026, 3, day, hour, 0, 0, 0, time.UTC) }
		want := []persistence.HourCount{
			{Hour: h(12, 9), Status: persistence.StatusNotRouted, Count: 1},   // 23 h 59 min ago
			{Hour: h(12, 9), Status: persistence.StatusReceived, Count: 1},    // exactly 24 h ago
			{Hour: h(11, 10), Status: persistence.StatusInProgress, Count: 2}, // 70 and 80 min ago
			{Hour: h(11, 10), Status: persistence.StatusReceived, Count: 1},
			{Hour: h(12, 10), Status: persistence.StatusInProgress, Count: 1},
		}
		if !slices.EqualFunc(got, want, func(a, b persistence.HourCount) bool {
			return a.Hour.Equal(b.Hour) && a.Status == b.Status && a.Count == b.Count
		}) {
			t.Fatalf("per hour = %+v, want %+v", got, want)
		}
	})
}

func TestOnHistory(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		var mu sync.Mutex
		var got [][]int64
		s.OnHistory(func(ids []int64) {
			mu.Lock()
			got = append(got, slices.Clone(ids))
			mu.Unlock()
		})
		msgs := insert(t, s, 2, writer)
		if _, _, err := s.ListMessages(ctx, persistence.MessageFilter{}); err != nil {
			t.Fatal(err)
		}
		claims := claimAll(t, s, writer, time.Now())
		complete(t, s, persistence.Completion{DeliveryID: claims[0].Delivery.ID, Token: claims[0].Delivery.ClaimToken, Kind: persistence.OutcomeDelivered})
		s.OnHistory(nil)
		insert(t, s, 1, writer)

		mu.Lock()
		defer mu.Unlock()
		want := [][]int64{{msgs[0].ID, msgs[1].ID}, {msgs[0].ID, msgs[1].ID}, {claims[0].Delivery.MessageID}}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("announced %v, want %v", got, want)
		}
	})
}

// BenchmarkDashboardCounts runs the dashboard's two count queries over 100,000 messages.
func BenchmarkDashboardCounts(b *testing.B) {
	for _, d := range dbtest.Dialects() {
		b.Run(d, func(b *testing.B) {
			s := dbtest.Open(b, d)
			fixture(b, s)
			for range 100_000 / 1000 {
				insert(b, s, 1000, writer)
			}
			ctx := context.Background()
			now := time.Now()
			b.ResetTimer()
			for range b.N {
				if _, err := s.CountMessagesByStatus(ctx, now.Add(-24*time.Hour), now.Add(-7*24*time.Hour)); err != nil {
					b.Fatal(err)
				}
				if _, err := s.CountMessagesPerHour(ctx, now.Add(-24*time.Hour)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
