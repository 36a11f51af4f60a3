package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
)

func newStore(t testing.TB) *Local {
	t.Helper()
	l, err := NewLocal(filepath.Join(t.TempDir(), "payloads"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func readAll(t *testing.T, l Store, key string) []byte {
	t.Helper()
	rc, err := l.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tempFiles lists what is left in the temporary directory.
func tempFiles(t *testing.T, l *Local) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(l.Root(), tmpDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestKeyLayout(t *testing.T) {
	tests := []struct {
		id    int64
		stage persistence.PayloadStage
		want  string
	}{
		{1, persistence.PayloadUnpacked, "0/000/1.unpacked"},
		{999, persistence.PayloadReceived, "0/000/999.received"},
		{1_000, persistence.PayloadHeaders, "0/001/1000.headers"},
		{1_234_567, persistence.PayloadReceipt, "1/234/1234567.receipt"},
		{98_765_432_100, persistence.PayloadUnpacked, "98765/432/98765432100.unpacked"},
	}
	for _, tt := range tests {
		got, err := Key(tt.id, tt.stage)
		if err != nil || got != tt.want {
			t.Errorf("Key(%d, %s) = %q, %v; want %q", tt.id, tt.stage, got, err, tt.want)
		}
	}
	for _, bad := range []struct {
		id    int64
		stage persistence.PayloadStage
	}{{0, persistence.PayloadUnpacked}, {-5, persistence.PayloadUnpacked}, {1, "../x"}, {1, ""}} {
		if k, err := Key(bad.id, bad.stage); err == nil {
			t.Errorf("Key(%d, %q) = %q, want an error", bad.id, bad.stage, k)
		}
	}
}

func TestPutOpenRoundTrip(t *testing.T) {
	l := newStore(t)
	ctx := context.Background()
	big := make([]byte, 300_000) // spans several copy buffers
	rand.Read(big)
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"small", []byte("UNB+UNOC:3+SENDER+RECEIVER'")},
		{"large", big},
	} {
		t.Run(tt.name, func(t *testing.T) {
			blob, err := l.Put(ctx, 42, persistence.PayloadUnpacked, bytes.NewReader(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(tt.data)
			if blob.Key != "0/000/42.unpacked" || blob.Size != int64(len(tt.data)) || blob.SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("blob %+v, want key 0/000/42.unpacked size %d sha256 %x", blob, len(tt.data), sum)
			}
			if got := readAll(t, l, blob.Key); !bytes.Equal(got, tt.data) {
				t.Fatalf("read %d bytes back, want %d", len(got), len(tt.data))
			}
			p, err := l.Path(blob.Key)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(l.Root(), "0", "000", "42.unpacked"); p != want {
				t.Fatalf("Path = %s, want %s", p, want)
			}
		})
	}
	if left := tempFiles(t, l); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestPutReplacesAtomically(t *testing.T) {
	l := newStore(t)
	ctx := context.Background()
	if _, err := l.Put(ctx, 7, persistence.PayloadReceipt, strings.NewReader("first version")); err != nil {
		t.Fatal(err)
	}
	// A reader holding the old file keeps reading the old bytes while the new ones go in.
	old, err := l.Open(ctx, "0/000/7.receipt")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	blob, err := l.Put(ctx, 7, persistence.PayloadReceipt, strings.NewReader("second"))
	if err != nil {
		t.Fatal(err)
	}
	if blob.Size != 6 {
		t.Fatalf("size %d, want 6", blob.Size)
	}
	if got := readAll(t, l, blob.Key); string(got) != "second" {
		t.Fatalf("after replace: %q", got)
	}
	if got, _ := io.ReadAll(old); string(got) != "first version" {
		t.Fatalf("open handle saw %q, want the old bytes whole", got)
	}
}

func TestPutLimited(t *testing.T) {
	l := newStore(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		size    int
		max     int64
		wantErr error
	}{
		{"under", 99, 100, nil},
		{"exactly", 100, 100, nil},
		{"one over", 101, 100, ErrTooLarge},
		{"far over", 1 << 20, 100, ErrTooLarge},
		{"zero limit, empty", 0, 0, nil},
		{"zero limit, one byte", 1, 0, ErrTooLarge},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := int64(100 + i)
			blob, err := l.PutLimited(ctx, id, persistence.PayloadReceived, bytes.NewReader(make([]byte, tt.size)), tt.max)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			key, _ := Key(id, persistence.PayloadReceived)
			_, statErr := os.Stat(filepath.Join(l.Root(), filepath.FromSlash(key)))
			if tt.wantErr != nil {
				if !os.IsNotExist(statErr) {
					t.Fatalf("refused payload left a file: %v", statErr)
				}
				if left := tempFiles(t, l); len(left) != 0 {
					t.Fatalf("refused payload left temporary files: %v", left)
				}
				return
			}
			if statErr != nil || blob.Size != int64(tt.size) {
				t.Fatalf("stored %+v, stat %v", blob, statErr)
			}
		})
	}

	// A refused replacement keeps what was stored before.
	if _, err := l.Put(ctx, 5, persistence.PayloadUnpacked, strings.NewReader("keep me")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.PutLimited(ctx, 5, persistence.PayloadUnpacked, strings.NewReader("far too long"), 3); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error %v, want ErrTooLarge", err)
	}
	if got := readAll(t, l, "0/000/5.unpacked"); string(got) != "keep me" {
		t.Fatalf("after refused replace: %q", got)
	}
}

type failingReader struct{ after int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("connection reset")
	}
	n := min(len(p), f.after)
	f.after -= n
	return n, nil
}

func TestPutFailureLeavesNothing(t *testing.T) {
	l := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Put(ctx, 1, persistence.PayloadUnpacked, strings.NewReader("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
	if _, err := l.Put(context.Background(), 2, persistence.PayloadUnpacked, &failingReader{after: 100_000}); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("failing reader: %v", err)
	}
	for _, key := range []string{"0/000/1.unpacked", "0/000/2.unpacked"} {
		if _, err := l.Open(context.Background(), key); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s after failed put: %v", key, err)
		}
	}
	if left := tempFiles(t, l); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestKeysOutsideTheStoreAreRefused(t *testing.T) {
	l := newStore(t)
	ctx := context.Background()
	secret := filepath.Join(filepath.Dir(l.Root()), "secrets.key")
	if err := os.WriteFile(secret, []byte("do not serve"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{
		"", ".", "..", "../secrets.key", "0/../../secrets.key", "0/000/../../../secrets.key",
		"/etc/passwd", secret, `..\secrets.key`, "0//000/1.unpacked", "./0/000/1.unpacked",
		"0/000/1.unpacked/", ".tmp/x", "C:/x", "a\x00b",
	} {
		if _, err := l.Open(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Open(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := l.Path(key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Path(%q) = %v, want ErrInvalidKey", key, err)
		}
		if err := l.Delete(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatalf("file outside the store was touched: %v", err)
	}
}

func TestNotFoundAndDelete(t *testing.T) {
	l := newStore(t)
	ctx := context.Background()
	if _, err := l.Open(ctx, "0/000/9.unpacked"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of a missing blob: %v", err)
	}
	if err := l.Delete(ctx, "0/000/9.unpacked"); err != nil {
		t.Fatalf("Delete of a missing blob: %v", err)
	}
	for _, stage := range []persistence.PayloadStage{persistence.PayloadUnpacked, persistence.PayloadReceived, persistence.PayloadHeaders} {
		if _, err := l.Put(ctx, 9, stage, strings.NewReader(string(stage))); err != nil {
			t.Fatal(err)
		}
	}
	neighbour, err := l.Put(ctx, 10, persistence.PayloadUnpacked, strings.NewReader("other message"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(ctx, "0/000/9.headers"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Open(ctx, "0/000/9.headers"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after Delete: %v", err)
	}
	if err := l.DeleteMessage(ctx, 9); err != nil {
		t.Fatal(err)
	}
	for _, stage := range persistence.AllPayloadStages {
		key, _ := Key(9, stage)
		if _, err := l.Open(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s after DeleteMessage: %v", key, err)
		}
	}
	if got := readAll(t, l, neighbour.Key); string(got) != "other message" {
		t.Fatalf("DeleteMessage touched another message: %q", got)
	}
	if err := l.DeleteMessage(ctx, 9); err != nil {
		t.Fatalf("DeleteMessage twice: %v", err)
	}
}

func TestDeferredSync(t *testing.T) {
	tests := []struct {
		name  string
		opt   PutOption
		flush func(l *Local, ctx context.Context, keys []string) error
	}{
		{"directories", DeferDirSync(), (*Local).SyncDirs},
		{"everything", DeferSync(), (*Local).Sync},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newStore(t)
			ctx := context.Background()
			var keys []string
			for id := int64(990); id < 1010; id++ { // crosses into a second directory
				blob, err := l.Put(ctx, id, persistence.PayloadUnpacked, strings.NewReader(fmt.Sprint(id)), tt.opt)
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, blob.Key)
			}
			if err := tt.flush(l, ctx, keys); err != nil {
				t.Fatal(err)
			}
			for i, key := range keys {
				if got := readAll(t, l, key); string(got) != fmt.Sprint(990+i) {
					t.Fatalf("%s holds %q", key, got)
				}
			}
			if err := l.SyncDirs(ctx, []string{"../x"}); !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("SyncDirs of an escaping key: %v", err)
			}
		})
	}
}

func TestConcurrentPuts(t *testing.T) {
	l := newStore(t)
	ctx := context.Background()
	const writers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				// Ids spread over several directories, created concurrently.
				id := int64(1 + (w*each+i)*97)
				body := fmt.Sprintf("message %d", id)
				blob, err := l.Put(ctx, id, persistence.PayloadUnpacked, strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				if blob.Size != int64(len(body)) {
					errs <- fmt.Errorf("message %d: size %d", id, blob.Size)
				}
			}
		})
	}
	// Concurrent replaces of one key end with one complete version.
	for i := range 4 {
		wg.Go(func() {
			body := strings.Repeat(string(rune('a'+i)), 10_000)
			if _, err := l.Put(ctx, 5_000_000, persistence.PayloadReceived, strings.NewReader(body)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range writers {
		for i := range each {
			id := int64(1 + (w*each+i)*97)
			key, _ := Key(id, persistence.PayloadUnpacked)
			if got := readAll(t, l, key); string(got) != fmt.Sprintf("message %d", id) {
				t.Fatalf("%s holds %q", key, got)
			}
		}
	}
	got := readAll(t, l, "5/000/5000000.received")
	if len(got) != 10_000 || strings.Count(string(got), string(got[0])) != 10_000 {
		t.Fatalf("concurrent replaces produced a mixed blob of %d bytes", len(got))
	}
	if left := tempFiles(t, l); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestNewLocalRemovesStaleTemporaryFiles(t *testing.T) {
	root := filepath.Join(t.TempDir(), "payloads")
	if _, err := NewLocal(root); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, tmpDir, "1.unpacked.123")
	fresh := filepath.Join(root, tmpDir, "2.unpacked.456")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * staleTemp)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLocal(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temporary file kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("recent temporary file (maybe another process's upload) removed: %v", err)
	}
}

func BenchmarkPut4KiB(b *testing.B) {
	data := make([]byte, 4096)
	rand.Read(data)
	ctx := context.Background()
	b.Run("durable", func(b *testing.B) {
		l := newStore(b)
		b.SetBytes(int64(len(data)))
		var id int64
		for b.Loop() {
			id++
			if _, err := l.Put(ctx, id, persistence.PayloadUnpacked, bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A poller's batch: 100 puts, then one directory sync for the batch.
	b.Run("batch100", func(b *testing.B) {
		l := newStore(b)
		b.SetBytes(int64(len(data)))
		var id int64
		keys := make([]string, 0, 100)
		for b.Loop() {
			id++
			blob, err := l.Put(ctx, id, persistence.PayloadUnpacked, bytes.NewReader(data), DeferDirSync())
			if err != nil {
				b.Fatal(err)
			}
			if keys = append(keys, blob.Key); len(keys) == cap(keys) {
				if err := l.SyncDirs(ctx, keys); err != nil {
					b.Fatal(err)
				}
				keys = keys[:0]
			}
		}
		if err := l.SyncDirs(ctx, keys); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		l := newStore(b)
		b.SetBytes(int64(len(data)))
		var mu sync.Mutex
		var next int64
		b.SetParallelism(8) // fsyncs overlap; callers run several workers
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				mu.Lock()
				next++
				id := next
				mu.Unlock()
				if _, err := l.Put(ctx, id, persistence.PayloadUnpacked, bytes.NewReader(data)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func TestPutNoReplace(t *testing.T) {
	l := newStore(t)
	ctx := context.Background()
	if _, err := l.Put(ctx, 8, persistence.PayloadReceipt, strings.NewReader("the first receipt"), NoReplace()); err != nil {
		t.Fatal(err)
	}
	_, err := l.Put(ctx, 8, persistence.PayloadReceipt, strings.NewReader("another"), NoReplace())
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Put = %v, want fs.ErrExist", err)
	}
	if got := readAll(t, l, "0/000/8.receipt"); string(got) != "the first receipt" {
		t.Fatalf("stored blob = %q, want it unchanged", got)
	}
	if left, _ := os.ReadDir(l.tmp); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
