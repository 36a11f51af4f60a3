package storage

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestNamedBlobs(t *testing.T) {
	ctx := context.Background()
	local := newStore(t)
	for name, stores := range map[string]*Stores{
		"local": must(NewStores(KindLocal, local, nil)),
		"s3":    must(NewStores(KindS3, local, newS3(t, "wharf/"))),
	} {
		t.Run(name, func(t *testing.T) {
			body := bytes.Repeat([]byte("line\n"), 1000)
			b, err := stores.PutNamed(ctx, "history/2026-09.jsonl.gz", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if b.Size != int64(len(body)) || b.SHA256 != sum(body) || !strings.HasSuffix(b.Key, "history/2026-09.jsonl.gz") {
				t.Fatalf("blob %+v", b)
			}
			if got := readAll(t, stores, b.Key); !bytes.Equal(got, body) {
				t.Fatalf("read back %d bytes, want %d", len(got), len(body))
			}
			for _, bad := range []string{"", "/abs", "../up", "history/../../x", "1/000/1.unpacked", ".tmp/x", "a:b"} {
				if _, err := stores.PutNamed(ctx, bad, strings.NewReader("x")); !errors.Is(err, ErrInvalidKey) {
					t.Errorf("PutNamed(%q) = %v, want ErrInvalidKey", bad, err)
				}
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
