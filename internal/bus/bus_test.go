package bus

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
)

// testLogger sends log output to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func startBus(t *testing.T, opt EmbeddedOptions) *Bus {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := StartEmbedded(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// received collects what a subscriber got.
type received struct {
	mu   sync.Mutex
	msgs []string
	ch   chan struct{}
}

func newReceived() *received { return &received{ch: make(chan struct{}, 1000)} }

func (r *received) add(subject string, data []byte) {
	r.mu.Lock()
	r.msgs = append(r.msgs, subject+"="+string(data))
	r.mu.Unlock()
	r.ch <- struct{}{}
}

// waitFor blocks until n messages arrived or the deadline passes.
func (r *received) waitFor(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		r.mu.Lock()
		if len(r.msgs) >= n {
			got := append([]string(nil), r.msgs...)
			r.mu.Unlock()
			return got
		}
		r.mu.Unlock()
		select {
		case <-r.ch:
		case <-deadline:
			t.Fatalf("received %d messages within the deadline, want %d", len(r.msgs), n)
		}
	}
}

func TestSubjects(t *testing.T) {
	tests := []struct{ got, want string }{
		{WakeupSubject(persistence.InstanceName("file_writer_default")), "delivery.file_writer_default"},
		{MessageEventSubject(42), "message.42"},
		{ConfigChangedSubject, "config.changed"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("subject %q, want %q", tt.got, tt.want)
		}
	}
}

func TestPublishSubscribe(t *testing.T) {
	b := startBus(t, EmbeddedOptions{})
	target := persistence.InstanceName("as2_sender_default")

	wakeups, events := newReceived(), newReceived()
	if _, err := b.Subscribe(WakeupSubject(target), wakeups.add); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Subscribe(AllMessageEventsSubject, events.add); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Flush(ctx); err != nil { // subscriptions are registered before publishing
		t.Fatal(err)
	}

	for _, p := range []struct{ subject, data string }{
		{WakeupSubject(target), "1"},
		{WakeupSubject("someone_else"), "x"},
		{MessageEventSubject(7), "status changed"},
		{MessageEventSubject(8), "delivered"},
		{WakeupSubject(target), "2"},
	} {
		if err := b.Publish(p.subject, []byte(p.data)); err != nil {
			t.Fatal(err)
		}
	}
	if got := wakeups.waitFor(t, 2); strings.Join(got, ",") != "delivery.as2_sender_default=1,delivery.as2_sender_default=2" {
		t.Fatalf("wake-ups %v", got)
	}
	if got := events.waitFor(t, 2); strings.Join(got, ",") != "message.7=status changed,message.8=delivered" {
		t.Fatalf("events %v", got)
	}
}

func TestUnsubscribe(t *testing.T) {
	b := startBus(t, EmbeddedOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gone, stays := newReceived(), newReceived()
	sub, err := b.Subscribe(ConfigChangedSubject, gone.add)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Subscribe(ConfigChangedSubject, stays.add); err != nil {
		t.Fatal(err)
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatalf("second Unsubscribe: %v", err)
	}
	if err := b.Publish(ConfigChangedSubject, []byte("routes")); err != nil {
		t.Fatal(err)
	}
	// Once the other subscriber has the message, the removed one would have had it too.
	stays.waitFor(t, 1)
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	gone.mu.Lock()
	defer gone.mu.Unlock()
	if len(gone.msgs) != 0 {
		t.Fatalf("unsubscribed handler got %v", gone.msgs)
	}
}

func TestRequestReply(t *testing.T) {
	b := startBus(t, EmbeddedOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if _, err := b.Respond("services.status", func(subject string, data []byte) []byte {
		return append([]byte("status of "), data...)
	}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Request(ctx, "services.status", []byte("file_poller_default"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "status of file_poller_default" {
		t.Fatalf("reply %q", got)
	}

	if _, err := b.Request(ctx, "nobody.listens", nil); !errors.Is(err, ErrNoResponders) {
		t.Fatalf("request without responder: %v, want ErrNoResponders", err)
	}

	if _, err := b.Respond("slow", func(string, []byte) []byte {
		<-ctx.Done()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := b.Request(short, "slow", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request past its deadline: %v", err)
	}
	cancel() // releases the slow responder before Close drains
}

func TestEmbeddedOpensNoPortByDefault(t *testing.T) {
	b := startBus(t, EmbeddedOptions{})
	if b.srv == nil {
		t.Fatal("no embedded server")
	}
	if addr := b.srv.Addr(); addr != nil {
		t.Fatalf("embedded server listens on %v", addr)
	}
	if addr := b.Addr(); addr != nil {
		t.Fatalf("Addr() = %v, want nil", addr)
	}
}

func TestEmbeddedListenAddrAcceptsOtherProcesses(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))
	b := startBus(t, EmbeddedOptions{ListenAddr: "127.0.0.1:0", Logger: logger})
	addr, ok := b.Addr().(*net.TCPAddr)
	if !ok || addr.Port == 0 || !addr.IP.IsLoopback() {
		t.Fatalf("Addr() = %v, want a loopback TCP address with a port", b.Addr())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client, err := Connect(ctx, "nats://"+addr.String(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if client.Addr() != nil {
		t.Fatal("a client bus reports a listen address")
	}

	got := newReceived()
	if _, err := b.Subscribe("delivery.*", got.add); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := client.Publish(WakeupSubject("http_poster_erp"), nil); err != nil {
		t.Fatal(err)
	}
	if msgs := got.waitFor(t, 1); msgs[0] != "delivery.http_poster_erp=" {
		t.Fatalf("got %v", msgs)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logged.String(), "no authentication") {
		t.Fatalf("warned about a loopback port: %s", logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestStartEmbeddedRefusesBadListenAddr(t *testing.T) {
	for _, addr := range []string{"nohost", "127.0.0.1:http", "127.0.0.1:70000"} {
		if b, err := StartEmbedded(context.Background(), EmbeddedOptions{ListenAddr: addr, Logger: testLogger(t)}); err == nil {
			b.Close()
			t.Errorf("ListenAddr %q accepted", addr)
		}
	}
}

func TestCloseDrainsAndIsIdempotent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := StartEmbedded(ctx, EmbeddedOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := newReceived()
	if _, err := b.Subscribe("drain.test", got.add); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 200
	for range n {
		if err := b.Publish("drain.test", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Draining hands every message already published to its handler before closing.
	got.mu.Lock()
	count := len(got.msgs)
	got.mu.Unlock()
	if count != n {
		t.Fatalf("handler saw %d of %d messages published before Close", count, n)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if b.srv.Running() {
		t.Fatal("embedded server still running after Close")
	}
	if err := b.Publish("drain.test", nil); err == nil {
		t.Fatal("Publish after Close succeeded")
	}
}

func TestConnectFailsWithoutServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	url := "nats://user:s3cret@" + addr
	b, err := Connect(ctx, url, testLogger(t))
	if err == nil {
		b.Close()
		t.Fatal("Connect succeeded without a server")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error repeats credentials: %v", err)
	}
}
