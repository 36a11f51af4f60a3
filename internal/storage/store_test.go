package storage

import (
	"context"
	"strings"
	"testing"

	"wharf/internal/persistence"
)

func TestNewStoresRefusesWhatCannotWork(t *testing.T) {
	local := newStore(t)
	for _, tc := range []struct {
		kind  string
		local *Local
		want  string
	}{
		{KindS3, local, "not configured"},
		{"ftp", local, "unknown kind"},
		{KindLocal, nil, "local store is required"},
	} {
		if _, err := NewStores(tc.kind, tc.local, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewStores(%s): %v, want an error saying %q", tc.kind, err, tc.want)
		}
	}
}

// TestStoresRouteByKey: new blobs go to the active store, and every key is read from the
// store that holds it, whichever is active; an S3 key with no bucket configured is an
// error naming the key.
func TestStoresRouteByKey(t *testing.T) {
	ctx := context.Background()
	local := newStore(t)
	s3 := newS3(t, "")
	put := func(s *Stores, id int64, body string) string {
		t.Helper()
		b, err := s.Put(ctx, id, persistence.PayloadUnpacked, strings.NewReader(body), DeferSync())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(ctx, []string{b.Key}); err != nil {
			t.Fatal(err)
		}
		return b.Key
	}
	onLocal, err := NewStores(KindLocal, local, s3)
	if err != nil {
		t.Fatal(err)
	}
	onS3, err := NewStores(KindS3, local, s3)
	if err != nil {
		t.Fatal(err)
	}
	k1 := put(onLocal, 1, "on disk")
	k2 := put(onS3, 2, "in the bucket")
	if strings.HasPrefix(k1, "s3:") || !strings.HasPrefix(k2, "s3:wharf-test/") {
		t.Fatalf("keys %q and %q", k1, k2)
	}
	for _, s := range []*Stores{onLocal, onS3} {
		if got := string(readAll(t, s, k1)); got != "on disk" {
			t.Errorf("%s store reads the local blob as %q", s.Kind(), got)
		}
		if got := string(readAll(t, s, k2)); got != "in the bucket" {
			t.Errorf("%s store reads the S3 blob as %q", s.Kind(), got)
		}
	}
	noBucket, err := NewStores(KindLocal, local, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noBucket.Open(ctx, k2); err == nil || !strings.Contains(err.Error(), k2) {
		t.Fatalf("an S3 key with no bucket configured: %v", err)
	}
	if err := onLocal.Delete(ctx, k2); err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Open(ctx, k2); err == nil {
		t.Fatal("the S3 blob survived its delete")
	}
}

// TestProbePasses: the storage test passes on a working store of each kind, with or
// without a prefix; the local one leaves no file behind.
func TestProbePasses(t *testing.T) {
	ctx := context.Background()
	local := newStore(t)
	if res := local.Probe(ctx); !res.OK || res.Store != KindLocal {
		t.Fatalf("local probe: %+v", res)
	}
	if left := tempFiles(t, local); len(left) != 0 {
		t.Fatalf("the local probe left %v", left)
	}
	for _, prefix := range []string{"", "wharf/"} {
		s3 := newS3(t, prefix)
		if res := s3.Probe(ctx); !res.OK || res.Store != KindS3 || res.Location != "wharf-test" {
			t.Fatalf("S3 probe with prefix %q: %+v", prefix, res)
		}
	}
}
