package api

import (
	"testing"
)

// TestStorageRoutesWithoutStorage: a process that does not run payload storage answers
// its routes 503, named; the gateway tests cover them with the real storage.
func TestStorageRoutesWithoutStorage(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		for _, rt := range []struct{ method, path string }{
			{"GET", "/api/v1/settings/storage"},
			{"POST", "/api/v1/settings/storage/test"},
		} {
			if e := b.must(503, rt.method, rt.path, "").errorOf(t); e.Code != "UNAVAILABLE" {
				t.Errorf("%s %s: code %s", rt.method, rt.path, e.Code)
			}
		}
	})
}

// TestSettingsS3NeedsABucket: choosing S3 without a bucket is refused, naming s3_bucket.
func TestSettingsS3NeedsABucket(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		e := b.must(400, "PUT", "/api/v1/settings", `{"payload_storage":"s3"}`).errorOf(t)
		if e.Details["s3_bucket"] == nil {
			t.Errorf("details %v lack s3_bucket", e.Details)
		}
		b.must(200, "PUT", "/api/v1/settings", `{"payload_storage":"s3","s3_bucket":"wharf-payloads"}`)
	})
}
