package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

func TestUnknownSendersCountedAndBounded(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		hit := persistence.UnknownSenderHit{Source: "as2_in", RemoteAddr: "192.0.2.7", SenderID: "STRANGER",
			ReceiverID: "WHARF", Reason: "no trading partner agreement", Count: 1}
		must(t, s.RecordUnknownSenders(ctx, []persistence.UnknownSenderHit{hit}))
		hit.Reason, hit.Count = "no trading partner agreement, again", 2
		// Whatever a request sends is stored as valid, bounded text.
		must(t, s.RecordUnknownSenders(ctx, []persistence.UnknownSenderHit{hit, {Source: "as2_in", RemoteAddr: "192.0.2.8",
			SenderID: "bad\xff\x01" + strings.Repeat("x", 300), Reason: "the AS2-To header is missing", Count: 1}}))
		if err := s.RecordUnknownSenders(ctx, []persistence.UnknownSenderHit{{Source: "as2_in"}}); err == nil {
			t.Error("a hit counting no request was taken")
		}
		list, total, err := s.ListUnknownSenders(ctx, persistence.ListOptions{})
		must(t, err)
		if total != 2 || len(list) != 2 {
			t.Fatalf("unknown senders = %d (%+v), want 2", total, list)
		}
		odd, known := list[0], list[1]
		if known.Count != 3 || known.SenderID != "STRANGER" || known.ReceiverID != "WHARF" ||
			known.LastReason != hit.Reason || known.FirstSeen.After(known.LastSeen) {
			t.Errorf("repeated pair = %+v, want count 3 with the last reason", known)
		}
		if odd.Count != 1 || len(odd.SenderID) > 140 || !strings.HasPrefix(odd.SenderID, "bad??") || odd.ReceiverID != "" {
			t.Errorf("odd ids stored as %+v", odd)
		}

		for n := range 2 {
			var hits []persistence.UnknownSenderHit
			for i := n * persistence.MaxUnknownSenders / 2; i < (n+1)*persistence.MaxUnknownSenders/2; i++ {
				hits = append(hits, persistence.UnknownSenderHit{Source: "as2_in",
					RemoteAddr: fmt.Sprintf("198.51.100.%d", i%250), SenderID: fmt.Sprintf("S%d", i), Reason: "unknown", Count: 1})
			}
			must(t, s.RecordUnknownSenders(ctx, hits))
		}
		list, total, err = s.ListUnknownSenders(ctx, persistence.ListOptions{Limit: 5})
		must(t, err)
		if total != persistence.MaxUnknownSenders {
			t.Fatalf("table holds %d rows, want at most %d", total, persistence.MaxUnknownSenders)
		}
		if want := fmt.Sprintf("S%d", persistence.MaxUnknownSenders-1); list[0].SenderID != want {
			t.Errorf("newest = %q, want %q", list[0].SenderID, want)
		}
		all, _, err := s.ListUnknownSenders(ctx, persistence.ListOptions{Limit: persistence.MaxUnknownSenders})
		must(t, err)
		for _, u := range all {
			if u.SenderID == "STRANGER" {
				t.Fatal("the pair seen longest ago was not evicted")
			}
		}
	})
}
