package logging

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func messages(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Message)
	}
	return out
}

func TestRingTailFilters(t *testing.T) {
	ring := NewRing(4, slog.LevelDebug)
	var text bytes.Buffer
	log := slog.New(Tee(NewHandler(slog.NewTextHandler(&text, &slog.HandlerOptions{Level: slog.LevelInfo})), NewHandler(ring.Handler())))
	log = log.With("component", "dispatch")
	log.Debug("first", "n", 1) // the ring takes debug; the text handler does not
	log.Info("second", "file", "order 7.edi")
	log.WithGroup("req").Warn("third", "path", "/ui/")
	log.ErrorContext(WithMessageID(context.Background(), 42), "fourth", "err", "disk full")
	log.Info("fifth")

	if strings.Contains(text.String(), "first") || !strings.Contains(text.String(), "fifth") {
		t.Fatalf("the process's own handler kept its level:\n%s", text.String())
	}
	for _, tc := range []struct {
		name  string
		min   slog.Level
		text  string
		limit int
		want  []string
	}{
		{"newest first, ring of four drops the oldest", slog.LevelDebug, "", 10, []string{"fifth", "fourth", "third", "second"}},
		{"limit", slog.LevelDebug, "", 2, []string{"fifth", "fourth"}},
		{"warn and above", slog.LevelWarn, "", 10, []string{"fourth", "third"}},
		{"error only", slog.LevelError, "", 10, []string{"fourth"}},
		{"text in attrs, any case", slog.LevelDebug, "DISK", 10, []string{"fourth"}},
		{"text in a quoted value", slog.LevelDebug, "order 7", 10, []string{"second"}},
		{"text in a grouped key", slog.LevelDebug, "req.path=/ui/", 10, []string{"third"}},
		{"text in a context id", slog.LevelDebug, "message_id=42", 10, []string{"fourth"}},
		{"text in the level", slog.LevelDebug, "warn", 10, []string{"third"}},
		{"text and level together", slog.LevelWarn, "fifth", 10, nil},
		{"no match", slog.LevelDebug, "nothing like it", 10, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := messages(ring.Tail(tc.min, tc.text, tc.limit)); !slices.Equal(got, tc.want) {
				t.Fatalf("tail = %v, want %v", got, tc.want)
			}
		})
	}
	if e := ring.Tail(slog.LevelError, "", 1)[0]; e.Attrs != "component=dispatch err=\"disk full\" message_id=42" || e.Seq != 4 {
		t.Fatalf("entry = %+v", e)
	}
}

func TestRingSubscribe(t *testing.T) {
	ring := NewRing(10, slog.LevelInfo)
	ch, cancel := ring.Subscribe()
	log := slog.New(ring.Handler())
	log.Debug("below the ring's level")
	select {
	case <-ch:
		t.Fatal("signalled for a record the ring does not keep")
	default:
	}
	log.Info("one")
	log.Info("two") // coalesced with the first signal
	select {
	case <-ch:
	default:
		t.Fatal("not signalled")
	}
	cancel()
	log.Info("three")
	select {
	case <-ch:
		t.Fatal("signalled after cancel")
	default:
	}
}

func TestRingAfter(t *testing.T) {
	r := NewRing(3, slog.LevelDebug)
	log := slog.New(r.Handler())
	for _, m := range []string{"one", "two", "three", "four"} {
		log.Info(m)
	}
	for _, tc := range []struct {
		seq   uint64
		limit int
		want  []string
	}{
		{0, 10, []string{"two", "three", "four"}}, // "one" fell out of the ring
		{2, 10, []string{"three", "four"}},
		{2, 1, []string{"three"}},
		{4, 10, nil},
	} {
		got, newest := r.After(tc.seq, tc.limit)
		var msgs []string
		for _, e := range got {
			msgs = append(msgs, e.Message)
		}
		if !slices.Equal(msgs, tc.want) || newest != 4 {
			t.Errorf("After(%d, %d) = %v, %d; want %v, 4", tc.seq, tc.limit, msgs, newest, tc.want)
		}
	}
}
