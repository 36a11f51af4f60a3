package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/storage/s3test"
)

// A blob changed in the bucket after its upload is refused when it is read back through
// Verify, naming the key; an intact one reads whole.
func TestVerifyDetectsBlobCorruptedOnServer(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	s, err := NewS3(ctx, S3Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true, Prefix: "wharf/"})
	if err != nil {
		t.Fatal(err)
	}
	s.partSize = 5 << 20 // the smallest S3 allows, so the large case is a multipart upload
	cases := []struct {
		name    string
		size    int
		corrupt func([]byte) []byte // nil leaves the object intact
	}{
		{"intact small", 1000, nil},
		{"intact multipart", 11<<20 + 7, nil},
		{"flipped byte", 1000, func(b []byte) []byte { b[500] ^= 1; return b }},
		{"flipped byte multipart", 11<<20 + 7, func(b []byte) []byte { b[9<<20] ^= 1; return b }},
		{"truncated", 1000, func(b []byte) []byte { return b[:999] }},
		{"extended", 1000, func(b []byte) []byte { return append(b, 'x') }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := bytes.Repeat([]byte{byte('a' + i)}, tc.size)
			blob, err := s.Put(ctx, int64(2000+i), persistence.PayloadUnpacked, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.corrupt != nil {
				_, object, _ := splitS3Key(blob.Key)
				file := filepath.Join(srv.Dir, srv.Bucket, filepath.FromSlash(object))
				// Rewritten in place, so the server keeps the object's metadata.
				if err := os.WriteFile(file, tc.corrupt(bytes.Clone(body)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rc, err := s.Open(ctx, blob.Key)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			got, err := io.ReadAll(Verify(rc, persistence.Payload{Key: blob.Key, Size: blob.Size, SHA256: blob.SHA256}))
			if tc.corrupt == nil {
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("intact blob: %d bytes, %v", len(got), err)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), blob.Key) {
				t.Fatalf("corrupted blob read: %v, want ErrCorrupt naming %s", err, blob.Key)
			}
		})
	}
}

// Verify leaves alone what it cannot or need not check: local blobs (not uploaded
// unsigned) and rows without a digest.
func TestVerifyPassesThroughUncheckedBlobs(t *testing.T) {
	rc := io.NopCloser(strings.NewReader("body"))
	for _, p := range []persistence.Payload{
		{Key: "00/00/1/unpacked", Size: 99, SHA256: sum([]byte("other"))},
		{Key: "s3:b/wharf/1/unpacked", Size: 99},
	} {
		if got := Verify(rc, p); got != rc {
			t.Errorf("Verify(%+v) wrapped the reader", p)
		}
	}
}
