package gateway

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"wharf/internal/bus"
)

// TestMessageEventsRoundTrip: what Announce publishes, SubscribeMessages hands back as
// message ids, which is how the store's commits reach the web UI's streams.
func TestMessageEventsRoundTrip(t *testing.T) {
	b, err := bus.StartEmbedded(context.Background(), bus.EmbeddedOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sig := busSignals{bus: b, log: slog.New(slog.DiscardHandler)}
	var mu sync.Mutex
	var got []int64
	cancel, err := sig.SubscribeMessages(func(id int64) {
		mu.Lock()
		got = append(got, id)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	// Another subject under message.* that is not an id is ignored.
	if err := b.Publish("message.x", nil); err != nil {
		t.Fatal(err)
	}
	sig.Announce([]int64{7, 8})
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := slices.Equal(got, []int64{7, 8})
		snapshot := slices.Clone(got)
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %v, want [7 8]", snapshot)
		}
		if err := b.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
}
