package httppost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"testing"

	"wharf/internal/persistence"
)

// A document of 64 MiB is posted from the store as it is read, with its length: the
// poster allocates a small part of it, and the server gets every byte, not chunked.
func TestPosterStreamsLargeDocument(t *testing.T) {
	const size = 64 << 20
	doc := func() io.Reader { return io.LimitReader(rand.NewChaCha8([32]byte{9}), size) }
	sum := sha256.New()
	io.Copy(sum, doc())
	var got []byte
	var length int64
	var chunked bool
	b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		io.Copy(h, r.Body)
		got, length, chunked = h.Sum(nil), r.ContentLength, len(r.TransferEncoding) > 0
		w.WriteHeader(http.StatusOK)
	}, nil)
	a := testAttempt("")
	a.Message.Size, a.Message.SHA256 = size, hex.EncodeToString(sum.Sum(nil))
	a.Open = func(context.Context) (io.ReadCloser, error) { return io.NopCloser(doc()), nil }
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := b.poster.Deliver(context.Background(), a)
	runtime.ReadMemStats(&after)
	wantResult(t, r, persistence.OutcomeDelivered, "", "")
	if hex.EncodeToString(got) != a.Message.SHA256 || length != size || chunked {
		t.Errorf("server got digest %x with length %d (chunked %v), want the document's %d bytes", got, length, chunked, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 {
		t.Errorf("posting %d MiB allocated %d MiB", size>>20, alloc>>20)
	}
}
