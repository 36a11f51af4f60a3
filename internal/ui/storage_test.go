package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/storage"
	"wharf/internal/storage/s3test"
)

// fakeStorage answers the settings page's storage card.
type fakeStorage struct {
	status storage.Status
	probe  storage.ProbeResult
	tests  int
}

func (f *fakeStorage) StorageStatus(context.Context) (storage.Status, error) { return f.status, nil }
func (f *fakeStorage) TestStorage(context.Context) (storage.ProbeResult, error) {
	f.tests++
	return f.probe, nil
}

func TestSettingsStorageCard(t *testing.T) {
	fs := &fakeStorage{
		status: storage.Status{Running: map[string]string{"payload_storage": "local"},
			Configured: map[string]string{"payload_storage": "s3", "s3_bucket": "wharf-payloads"}, PendingRestart: true},
		probe: storage.ProbeResult{Store: "s3", Location: "wharf-payloads", Step: storage.StepWrite,
			Code: "NoSuchBucket", HTTPStatus: 404, Message: "The specified bucket does not exist"},
	}
	ab := setupAccounts(t, func(d *Deps) { d.Storage = fs })

	page := ab.get(t, "/ui/settings", http.StatusOK)
	for _, want := range []string{`id="storage-pending"`, "Pending restart", `wharf-payloads`, `action="/ui/settings/storage/test"`} {
		if !strings.Contains(page, want) {
			t.Errorf("settings page lacks %q", want)
		}
	}
	// Settings that may be empty are not required in the form.
	if regexp.MustCompile(`name="s3_bucket"[^>]* required`).MatchString(page) {
		t.Error("s3_bucket is required in the form, but may be empty")
	}
	if !regexp.MustCompile(`name="max_dispatches"[^>]* required`).MatchString(page) {
		t.Error("max_dispatches is not required in the form")
	}

	r := ab.post(t, "/ui/settings/storage/test", url.Values{})
	if r.status != http.StatusUnprocessableEntity || fs.tests != 1 {
		t.Fatalf("failed test = %d after %d tests\n%s", r.status, fs.tests, r.body)
	}
	for _, want := range []string{"failed at the write step", "NoSuchBucket", "HTTP 404", "The specified bucket does not exist"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("failed test result lacks %q", want)
		}
	}

	fs.probe = storage.ProbeResult{OK: true, Store: "s3", Location: "wharf-payloads"}
	fs.status = storage.Status{Running: map[string]string{"payload_storage": "s3"}, Configured: map[string]string{"payload_storage": "s3"}}
	r = ab.post(t, "/ui/settings/storage/test", url.Values{})
	if r.status != http.StatusOK || !strings.Contains(r.body, "Storage test passed") || strings.Contains(r.body, "Pending restart") {
		t.Fatalf("passed test = %d\n%s", r.status, r.body)
	}
}

// TestMessagePayloadDownloadFromS3: a payload kept on S3 downloads from the message page
// like one on the local disk.
func TestMessagePayloadDownloadFromS3(t *testing.T) {
	srv := s3test.Start(t)
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s3, err := storage.NewS3(context.Background(), storage.S3Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	stores, err := storage.NewStores(storage.KindS3, local, s3)
	if err != nil {
		t.Fatal(err)
	}
	b := setupMessagesWith(t, stores)
	c := b.signedIn(t)
	m := b.insert(t, 1, acmeParty, writerInst)[0]
	p, err := b.store.GetPayload(context.Background(), m.ID, persistence.PayloadUnpacked)
	if err != nil || !strings.HasPrefix(p.Key, "s3:"+srv.Bucket+"/") {
		t.Fatalf("payload %+v, %v: want it in the bucket", p, err)
	}
	r := c.get(t, fmt.Sprintf("/ui/messages/%d/payload?stage=unpacked", m.ID))
	if r.status != http.StatusOK || r.body != fmt.Sprintf("document %d\x00\xff", m.ID) {
		t.Fatalf("download = %d %q", r.status, r.body)
	}
}
