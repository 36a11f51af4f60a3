//go:build unix

package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"wharf/internal/persistence"
)

// The cache serves a document uploaded from a file without downloading it, checks it as
// it is read, and refuses a copy changed since: the read fails (not as ErrCorrupt, the
// object may be sound) and the next one downloads the object.
func TestS3CacheServesAndRefuses(t *testing.T) {
	ctx := context.Background()
	s := newStreamS3(t)
	if err := s.EnableCache(filepath.Join(t.TempDir(), "s3cache"), 64<<20, time.Hour); err != nil {
		t.Fatal(err)
	}
	if s.cache == nil {
		t.Fatal("the cache is off on a system that locks directories")
	}
	content := bytes.Repeat([]byte("UNB+UNOA:1+"), 100_000)
	put := func(t *testing.T, id int64) (Blob, string) {
		t.Helper()
		src := filepath.Join(t.TempDir(), "claimed.edi")
		if err := os.WriteFile(src, content, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := s.Put(ctx, id, persistence.PayloadUnpacked, &fileBody{path: src})
		if err != nil {
			t.Fatal(err)
		}
		s.cache.mu.Lock()
		el := s.cache.entries[b.Key]
		s.cache.mu.Unlock()
		if el == nil {
			t.Fatal("the uploaded file was not cached")
		}
		return b, el.Value.(*cacheEntry).path
	}
	read := func(b Blob) ([]byte, error) {
		rc, err := s.Open(ctx, b.Key)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(Verify(rc, persistence.Payload{Key: b.Key, Size: b.Size, SHA256: b.SHA256}))
	}
	removeObject := func(t *testing.T, b Blob) {
		_, object, _ := splitS3Key(b.Key)
		if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(object)}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("served without the object", func(t *testing.T) {
		b, _ := put(t, 8001)
		removeObject(t, b)
		got, err := read(b)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("read %d bytes, %v", len(got), err)
		}
	})
	t.Run("changed copy refused, then downloaded", func(t *testing.T) {
		b, path := put(t, 8002)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("X"), 1234)
		f.Close()
		got, err := read(b)
		if !errors.Is(err, errCachedCopy) || errors.Is(err, ErrCorrupt) {
			t.Fatalf("read of a changed copy: %v", err)
		}
		if len(got) >= len(content) {
			t.Fatal("a changed copy was read whole")
		}
		if got, err = read(b); err != nil || !bytes.Equal(got, content) {
			t.Fatalf("read after the refusal: %d bytes, %v", len(got), err)
		}
	})
	t.Run("shortened copy not served", func(t *testing.T) {
		b, path := put(t, 8003)
		if err := os.Truncate(path, 10); err != nil {
			t.Fatal(err)
		}
		if got, err := read(b); err != nil || !bytes.Equal(got, content) {
			t.Fatalf("read %d bytes, %v", len(got), err)
		}
	})
	t.Run("dropped on delete", func(t *testing.T) {
		b, path := put(t, 8004)
		if err := s.Delete(ctx, b.Key); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("cached copy after delete: %v", err)
		}
		if _, err := s.Open(ctx, b.Key); !errors.Is(err, ErrNotFound) {
			t.Fatalf("open after delete: %v", err)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		for id := int64(8100); id < 8110; id++ {
			put(t, id)
		}
		s.cache.mu.Lock()
		total, n := s.cache.total, len(s.cache.entries)
		s.cache.mu.Unlock()
		if total > s.cache.maxBytes || int64(n)*int64(len(content)) != total {
			t.Fatalf("cache holds %d bytes in %d copies, bound %d", total, n, s.cache.maxBytes)
		}
	})
	t.Run("a new process removes the copies of one that ended", func(t *testing.T) {
		dir := filepath.Dir(s.cache.dir)
		stale := filepath.Join(dir, "c-ended")
		if err := os.MkdirAll(stale, 0o700); err != nil {
			t.Fatal(err)
		}
		other := &S3{}
		if err := other.EnableCache(dir, 1<<20, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("cache of an ended process: %v", err)
		}
		if _, err := os.Stat(s.cache.dir); err != nil {
			t.Fatalf("cache of a running process: %v", err)
		}
	})
}
