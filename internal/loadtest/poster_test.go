package loadtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence/db/dbtest"
)

// TestPosterRun runs the poster scenario end to end on the real binary: one `serve api`
// and two `serve plugin http-poster` processes on PostgreSQL and a NATS bus over TCP.
// RunPoster fails unless every document reached the receiver exactly once and the
// database holds every message delivered.
func TestPosterRun(t *testing.T) {
	url := dbtest.PostgresBaseURL(t)
	bin := buildWharf(t)
	res, err := RunPoster(context.Background(), PosterOptions{
		N: 120, SizeKiB: 1, Plugins: 2, Delay: 5 * time.Millisecond, MaxConcurrent: 4, Senders: 4,
		Bin: bin, Dir: t.TempDir(), DBURL: url, Timeout: 3 * time.Minute, Progress: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	roles := make([]string, len(res.Processes))
	for i, p := range res.Processes {
		roles[i] = p.Role
	}
	if got := strings.Join(roles, ","); got != "api,plugin 1,plugin 2" {
		t.Errorf("processes measured: %s, want api and two plugin processes", got)
	}
	if res.N != 120 || res.P50 <= 0 || res.P95 < res.P50 {
		t.Errorf("result %+v: want 120 documents and attempt percentiles in order", res)
	}
}

// TestPosterRunRefuses names what is wrong with options before anything starts.
func TestPosterRunRefuses(t *testing.T) {
	tests := []struct {
		name string
		opt  PosterOptions
		want string
	}{
		{"no documents", PosterOptions{N: 0, Plugins: 1, DBURL: "postgres://x"}, "-n must be positive"},
		{"no plugin process", PosterOptions{N: 1, Plugins: 0, DBURL: "postgres://x"}, "at least one plugin process"},
		{"no database", PosterOptions{N: 1, Plugins: 1}, "-db-url is required"},
		{"negative delay", PosterOptions{N: 1, Plugins: 1, DBURL: "postgres://x", Delay: -time.Second}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RunPoster(context.Background(), tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// TestReceiverExactlyOnce holds the receiver's check to every way a run can go wrong.
func TestReceiverExactlyOnce(t *testing.T) {
	sent := map[int64]bool{1: true, 2: true}
	tests := []struct {
		name  string
		posts []string // Idempotency-Keys in arrival order
		want  string   // "" for none
	}{
		{"each once", []string{"wharf-1-10", "wharf-2-11"}, ""},
		{"one twice", []string{"wharf-1-10", "wharf-2-11", "wharf-2-11"}, "1 messages arrived more than once"},
		{"one missing", []string{"wharf-1-10"}, "1 messages never arrived"},
		{"one never sent", []string{"wharf-1-10", "wharf-2-11", "wharf-3-12"}, "1 messages arrived that were never sent"},
		{"a foreign key", []string{"wharf-1-10", "wharf-2-11", "order-7"}, `1 posts named no message, e.g. "order-7"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &receiver{arrived: map[int64]time.Time{}, count: map[int64]int{}}
			for _, key := range tt.posts {
				r.record(key, time.Now())
			}
			err := r.checkExactlyOnce(sent)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}
