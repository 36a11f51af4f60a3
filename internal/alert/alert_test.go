package alert

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNormalize(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := Alert{Code: MessageFailed, Subject: Subject{Kind: "message", ID: "7"}, Summary: "line one\nline\ttwo",
		Details: []Detail{{"Reason", strings.Repeat("x", 600)}}, Link: "https://evil.example/"}
	if err := a.Normalize(now); err != nil {
		t.Fatal(err)
	}
	if a.Severity != SeverityCritical || a.DedupeKey != "message_failed:message:7" || a.Time != now || len(a.ID) != 32 {
		t.Fatalf("defaults not filled: %+v", a)
	}
	if a.Summary != "line one line two" {
		t.Fatalf("summary = %q", a.Summary)
	}
	if len(a.Details[0].Value) > maxDetail+len("…") {
		t.Fatalf("detail not clipped: %d", len(a.Details[0].Value))
	}
	if a.Link != "" {
		t.Fatalf("link outside /ui/ kept: %q", a.Link)
	}
	for _, bad := range []Alert{{Code: "nope", Subject: Subject{Kind: "x"}}, {Code: MessageFailed}, {Code: MessageFailed, Severity: "loud", Subject: Subject{Kind: "x"}}} {
		if err := bad.Normalize(now); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestCodesTable(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes {
		if seen[c.Code] || c.Label == "" || c.Severity.Rank() < 0 {
			t.Errorf("bad row %+v", c)
		}
		seen[c.Code] = true
		if got, err := ParseCode(string(c.Code)); err != nil || got != c.Code {
			t.Errorf("ParseCode(%s) = %v, %v", c.Code, got, err)
		}
	}
	if MessageFailed.Info().Severity != SeverityCritical || CertificateExpiring.Info().Severity != SeverityWarning {
		t.Fatal("default severities differ from the table")
	}
}

type blockingSink struct {
	release chan struct{}
	mu      sync.Mutex
	got     []Alert
}

func (s *blockingSink) Send(ctx context.Context, a Alert) error {
	<-s.release
	s.mu.Lock()
	s.got = append(s.got, a)
	s.mu.Unlock()
	return nil
}

func TestQueueNeverBlocksAndCountsDrops(t *testing.T) {
	sink := &blockingSink{release: make(chan struct{})}
	q := NewQueue(sink, nil, 4)
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The sink holds the first alert; four more fill the queue; the rest are dropped,
	// and none of the calls waits.
	for i := 0; i < 20; i++ {
		q.Raise(Alert{Code: MessageFailed, Subject: Subject{Kind: "message", ID: "1"}})
	}
	if d := q.Dropped(); d < 15 || d > 16 {
		t.Fatalf("dropped = %d, want 15 or 16", d)
	}
	close(sink.release)
	if err := q.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(sink.got) + int(q.Dropped()); got != 20 {
		t.Fatalf("sent %d + dropped %d != 20", len(sink.got), q.Dropped())
	}
	q.Raise(Alert{Code: MessageFailed, Subject: Subject{Kind: "message"}})
	if len(sink.got)+int(q.Dropped()) != 21 {
		t.Fatal("an alert raised after Stop is not counted as dropped")
	}
}

func TestEncodeDecode(t *testing.T) {
	a := Alert{Code: CertificateExpired, Subject: Subject{Kind: "certificate", ID: "3", Name: "cn"}}
	if err := a.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	b, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil || back.ID != a.ID || !back.Time.Equal(a.Time) || back.Severity != SeverityCritical {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if _, err := Decode([]byte(`{"code":"bogus","subject":{"kind":"x"}}`)); err == nil {
		t.Fatal("unknown code decoded")
	}
}
