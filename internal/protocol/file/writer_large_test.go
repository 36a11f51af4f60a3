package file

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"wharf/internal/persistence"
)

// A document of 64 MiB is written from the store to the directory as it is read: the
// writer allocates a small part of it, and the file holds every byte.
func TestWriterStreamsLargeDocument(t *testing.T) {
	const size = 64 << 20
	doc := func() io.Reader { return io.LimitReader(rand.NewChaCha8([32]byte{5}), size) }
	sum := sha256.New()
	io.Copy(sum, doc())
	b := setupWriter(t, nil)
	a := attempt(testMessage(), nil)
	a.Message.Size, a.Message.SHA256 = size, hex.EncodeToString(sum.Sum(nil))
	a.Open = func(context.Context) (io.ReadCloser, error) { return io.NopCloser(doc()), nil }
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := b.w.Deliver(context.Background(), a)
	runtime.ReadMemStats(&after)
	wantKind(t, r, persistence.OutcomeDelivered, "")
	f, err := os.Open(filepath.Join(b.dir, "acme", "order.xml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := sha256.New()
	if n, err := io.Copy(got, f); err != nil || n != size || hex.EncodeToString(got.Sum(nil)) != a.Message.SHA256 {
		t.Fatalf("file of %d bytes (%v) differs from the document of %d", n, err, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 {
		t.Errorf("writing %d MiB allocated %d MiB", size>>20, alloc>>20)
	}
}
