package download

import (
	"crypto/sha256"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"

	"wharf/internal/persistence"
)

// A payload of 64 MiB goes to the client as it is read: the download allocates a small
// part of it, and the client gets every byte with its length announced.
func TestSendStreamsLargePayload(t *testing.T) {
	const size = 64 << 20
	payload := func() io.Reader { return io.LimitReader(rand.NewChaCha8([32]byte{7}), size) }
	want := sha256.New()
	io.Copy(want, payload())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Send(w, r, slog.New(slog.DiscardHandler), persistence.Message{ID: 1, OriginalFileName: "big.bin"}, persistence.PayloadUnpacked, size, payload())
	}))
	defer srv.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if err != nil || n != size || resp.Header.Get("Content-Length") != strconv.Itoa(size) || string(got.Sum(nil)) != string(want.Sum(nil)) {
		t.Fatalf("got %d bytes (%v), Content-Length %q; want the payload's %d bytes", n, err, resp.Header.Get("Content-Length"), size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 {
		t.Errorf("a download of %d MiB allocated %d MiB", size>>20, alloc>>20)
	}
}
