package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/storage/s3test"
)

// A file body larger than a part goes as one PutObject streamed from the file, unsigned,
// with the right digest even when the request is retried.
func TestS3PutStreamsFileBodyInOnePut(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	content := bytes.Repeat([]byte("UNB+UNOA:1+"), 1<<20) // 11 MiB, more than a part
	src := filepath.Join(t.TempDir(), "claimed.edi")
	if err := os.WriteFile(src, content, 0o600); err != nil {
		t.Fatal(err)
	}
	given := hex.EncodeToString(bytes.Repeat([]byte{0xcd}, sha256.Size))
	cases := []struct {
		name     string
		body     FileBody
		retry    int
		wantHash string
	}{
		{"file", &fileBody{path: src}, 0, sum(content)},
		{"file, retried", &fileBody{path: src}, 2, sum(content)},
		{"digested file", &digestedBody{fileBody: fileBody{path: src}, sha256: given}, 1, given},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &s3Proxy{retryPut: tc.retry}
			s := startS3Proxy(t, srv, p)
			b, err := s.Put(ctx, int64(4000+i), persistence.PayloadReceived, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if b.SHA256 != tc.wantHash || b.Size != int64(len(content)) {
				t.Fatalf("Blob = %+v, want %d bytes with digest %s", b, len(content), tc.wantHash)
			}
			p.mu.Lock()
			puts, payloads := p.puts, p.payloads
			p.mu.Unlock()
			if len(puts) != 1+tc.retry {
				t.Fatalf("%d PUT requests (%q), want %d", len(puts), puts, 1+tc.retry)
			}
			for k, q := range puts {
				if q != "x-id=PutObject" || payloads[k] != "UNSIGNED-PAYLOAD" {
					t.Fatalf("PUT ?%s signed with %q, want one unsigned PutObject", q, payloads[k])
				}
			}
			if got := readAll(t, s, b.Key); !bytes.Equal(got, content) {
				t.Fatal("stored bytes differ from the file's")
			}
		})
	}
}
