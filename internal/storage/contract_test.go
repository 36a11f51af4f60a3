package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"runtime"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/storage/s3test"
)

// backends are the stores the contract runs against: the local disk and a real S3 server.
func backends(t *testing.T) map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"local": func(t *testing.T) Store {
			return newStore(t)
		},
		"s3": func(t *testing.T) Store { return newS3(t, "wharf/") },
	}
}

func newS3(t *testing.T, prefix string) *S3 {
	t.Helper()
	srv := s3test.Start(t)
	s, err := NewS3(context.Background(), S3Config{Bucket: srv.Bucket,
		Endpoint: srv.Endpoint, PathStyle: true, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			sizes := []int{0, 1, 4 << 10, 5<<20 + 3}
			for i, n := range sizes {
				body := bytes.Repeat([]byte{byte('a' + i)}, n)
				id := int64(1000 + i)
				b, err := s.Put(ctx, id, persistence.PayloadUnpacked, bytes.NewReader(body), DeferSync())
				if err != nil {
					t.Fatalf("put %d bytes: %v", n, err)
				}
				if b.Size != int64(n) || b.SHA256 != sum(body) {
					t.Fatalf("put %d bytes: blob %+v", n, b)
				}
				if k, err := s.KeyOf(id, persistence.PayloadUnpacked); err != nil || k != b.Key {
					t.Fatalf("KeyOf = %q, %v; Put stored under %q", k, err, b.Key)
				}
				if err := s.Sync(ctx, []string{b.Key}); err != nil {
					t.Fatal(err)
				}
				if got := readAll(t, s, b.Key); !bytes.Equal(got, body) {
					t.Fatalf("read back %d bytes, want %d", len(got), n)
				}
				// A second Put replaces; NoReplace refuses to.
				if _, err := s.Put(ctx, id, persistence.PayloadUnpacked, strings.NewReader("new")); err != nil {
					t.Fatal(err)
				}
				if got := readAll(t, s, b.Key); string(got) != "new" {
					t.Fatalf("after replace: %q", got)
				}
				if _, err := s.Put(ctx, id, persistence.PayloadUnpacked, strings.NewReader("other"), NoReplace()); !errors.Is(err, fs.ErrExist) {
					t.Fatalf("NoReplace over a blob: %v, want fs.ErrExist", err)
				}
				if err := s.Delete(ctx, b.Key); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Open(ctx, b.Key); !errors.Is(err, ErrNotFound) {
					t.Fatalf("open after delete: %v, want ErrNotFound", err)
				}
				if err := s.Delete(ctx, b.Key); err != nil {
					t.Fatalf("delete of a missing blob: %v", err)
				}
			}
		})
	}
}

// TestLargeBodyInBoundedMemory streams 192 MiB through each store and checks the heap
// never grows by anything near the body's size (S3 holds up to DefaultPartsInFlight
// parts of DefaultPartSize, 32 MiB).
func TestLargeBodyInBoundedMemory(t *testing.T) {
	const size = 192 << 20
	ctx := context.Background()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			stop := make(chan struct{})
			peak := make(chan uint64)
			go samplePeakHeap(ms.HeapInuse, stop, peak)
			b, err := s.Put(ctx, 7, persistence.PayloadUnpacked, &patternReader{left: size})
			if err != nil {
				close(stop)
				t.Fatal(err)
			}
			rc, err := s.Open(ctx, b.Key)
			if err != nil {
				close(stop)
				t.Fatal(err)
			}
			h := sha256.New()
			n, err := io.Copy(h, rc)
			rc.Close()
			close(stop)
			growth := <-peak
			if err != nil || n != size {
				t.Fatalf("read back %d bytes: %v", n, err)
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != b.SHA256 {
				t.Fatalf("digest read back %s, stored %s", got, b.SHA256)
			}
			t.Logf("%s: heap grew by at most %d MiB for a %d MiB body", name, growth>>20, size>>20)
			if growth > size/4 {
				t.Fatalf("heap grew by %d MiB while streaming %d MiB", growth>>20, size>>20)
			}
		})
	}
}

// samplePeakHeap reports the largest growth of the in-use heap over base, sampled until
// stop closes.
func samplePeakHeap(base uint64, stop <-chan struct{}, out chan<- uint64) {
	var ms runtime.MemStats
	peak := base
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			out <- peak - base
			return
		case <-tick.C:
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
}

// patternReader yields left bytes of a repeating pattern without holding them.
type patternReader struct {
	left int64
	off  byte
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	for i := range b {
		b[i] = p.off
		p.off++
	}
	p.left -= int64(len(b))
	return len(b), nil
}
