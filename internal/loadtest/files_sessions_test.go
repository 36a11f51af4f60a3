package loadtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence/db/dbtest"
)

// The order check finds a file written before an earlier file of its session, and only
// that: ties and other sessions' interleaving are in order.
func TestCheckOrder(t *testing.T) {
	at := func(ms int) time.Time {
		return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
	}
	for _, tc := range []struct {
		name     string
		arrivals []arrival
		want     string // a part of the error; "" for none
	}{
		{"in order", []arrival{{"a", 0, "doc-0", at(1)}, {"a", 2, "doc-2", at(5)}, {"b", 1, "doc-1", at(2)}, {"b", 3, "doc-3", at(3)}}, ""},
		{"ties in one clock tick", []arrival{{"a", 0, "doc-0", at(4)}, {"a", 1, "doc-1", at(4)}}, ""},
		{"sessions interleave", []arrival{{"a", 0, "doc-0", at(9)}, {"b", 1, "doc-1", at(1)}}, ""},
		{"overtaken", []arrival{{"a", 0, "doc-0", at(1)}, {"a", 1, "doc-1", at(7)}, {"a", 2, "doc-2", at(5)}, {"b", 3, "doc-3", at(2)}},
			"1 files overtook an earlier file of their session: [session a: doc-2 (dropped 2) written 2ms before doc-1 (dropped 1)]"},
		{"listed out of order, written in order", []arrival{{"a", 2, "doc-2", at(3)}, {"a", 0, "doc-0", at(1)}, {"a", 1, "doc-1", at(2)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkOrder(tc.arrivals)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("checkOrder = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("checkOrder = %v, want %q", err, tc.want)
			}
		})
	}
}

// An ordered run over a few sessions delivers every file and finds each session's files
// in order, on SQLite and, when configured, on PostgreSQL.
func TestOrderedRun(t *testing.T) {
	bin := buildWharf(t)
	for name, url := range map[string]string{"sqlite": "", "postgres": ""} {
		t.Run(name, func(t *testing.T) {
			if name == "postgres" {
				url = dbtest.PostgresBaseURL(t)
			}
			res, err := RunFiles(context.Background(), FilesOptions{
				N: 300, SizeKiB: 1, Bin: bin, Dir: t.TempDir(), DBURL: url,
				Sessions: 7, Ordered: true, Timeout: 3 * time.Minute, Progress: testWriter{t},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d files over 7 ordered sessions, %.0f messages/s", name, res.N, res.PerSecond)
		})
	}
	for _, bad := range []FilesOptions{{N: 1, Ordered: true}, {N: 1, Sessions: -1}, {N: 1, Sessions: maxSessions + 1}} {
		if _, err := RunFiles(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "-sessions") {
			t.Errorf("RunFiles(%+v) = %v, want a -sessions error", bad, err)
		}
	}
}
