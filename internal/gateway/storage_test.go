package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/storage"
	"wharf/internal/storage/s3test"
)

// fast are the settings of every run here: a quick sweep for the file poller's messages.
var fast = map[string]string{"sweep_interval": "100ms", "wakeup_backoff": "1s"}

// dropFile puts a document in the outbox of acme and waits until its message is
// delivered; it returns the message id.
func dropFile(t *testing.T, h *harness, name string, doc []byte) int64 {
	t.Helper()
	dir := filepath.Join(h.data, "outbox", "acme")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), doc, 0o640); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms, _, err := h.g.Store.ListMessages(context.Background(), persistence.MessageFilter{ListOptions: persistence.ListOptions{Limit: 100}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if string(m.OriginalFileName) == name {
				h.waitStatus(m.ID, "delivered")
				return m.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not taken within 30s", name)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// download fetches a message's unpacked payload through the REST API.
func download(t *testing.T, h *harness, id int64) []byte {
	t.Helper()
	status, body := h.gw.API("GET", fmt.Sprintf("/api/v1/messages/%d/payload", id), "", nil)
	if status != http.StatusOK {
		t.Fatalf("download message %d: %d %s", id, status, body)
	}
	return body
}

func storageStatus(t *testing.T, h *harness) storage.Status {
	t.Helper()
	var st storage.Status
	h.mustJSON("GET", "/api/v1/settings/storage", nil, &st)
	return st
}

func testStorage(t *testing.T, h *harness) (storage.ProbeResult, string) {
	t.Helper()
	status, body := h.gw.API("POST", "/api/v1/settings/storage/test", "", nil)
	if status != http.StatusOK {
		t.Fatalf("storage test: %d %s", status, body)
	}
	var res storage.ProbeResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

// TestSwitchLocalToS3 runs file → file on the local disk, switches the settings to S3
// (pending until the restart), restarts, and runs file → file again: the new payload is
// an object in the bucket, both messages download, the old one from the local disk.
func TestSwitchLocalToS3(t *testing.T) {
	srv := s3test.Start(t)
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			url := dbtest.ResolveURL(t, url) // both runs open the same database
			dir := t.TempDir()
			prefix := "wharf-" + name + "/"
			first := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, DataDir: dir, Settings: fast})
			h := &harness{t: t, g: first.Gateway, gw: first, data: dir}
			h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
			h.mustJSON("POST", "/api/v1/routes", map[string]any{"source": "file_poller_default", "from": "*", "to": "acme", "target": "file_writer_default"}, nil)
			oldDoc := []byte("UNB+OLD'")
			oldID := dropFile(t, h, "old.edi", oldDoc)

			h.mustJSON("PUT", "/api/v1/settings", map[string]string{"payload_storage": "s3", "s3_bucket": srv.Bucket,
				"s3_endpoint": srv.Endpoint, "s3_path_style": "true", "s3_prefix": prefix}, nil)
			st := storageStatus(t, h)
			if !st.PendingRestart || st.Running["payload_storage"] != "local" || st.Configured["payload_storage"] != "s3" {
				t.Fatalf("after the change: %+v, want S3 pending a restart", st)
			}
			if res, body := testStorage(t, h); !res.OK || res.Store != "s3" {
				t.Fatalf("storage test of the saved S3 settings: %s", body)
			}
			if err := first.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}

			second := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, DataDir: dir})
			h = &harness{t: t, g: second.Gateway, gw: second, data: dir}
			if st := storageStatus(t, h); st.PendingRestart || st.Running["payload_storage"] != "s3" {
				t.Fatalf("after the restart: %+v, want S3 running", st)
			}
			newDoc := bytes.Repeat([]byte("UNB+NEW'"), 1000)
			newID := dropFile(t, h, "new.edi", newDoc)
			got, err := os.ReadFile(filepath.Join(dir, "inbox", "local", "new.edi"))
			if err != nil || !bytes.Equal(got, newDoc) {
				t.Fatalf("inbox holds %d bytes (%v), want %d", len(got), err, len(newDoc))
			}
			p, err := second.Store.GetPayload(ctx, newID, persistence.PayloadUnpacked)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p.Key, "s3:"+srv.Bucket+"/"+prefix) {
				t.Fatalf("the new payload's key is %q, want one in the bucket", p.Key)
			}
			object := filepath.Join(srv.Dir, srv.Bucket, filepath.FromSlash(strings.TrimPrefix(p.Key, "s3:"+srv.Bucket+"/")))
			if b, err := os.ReadFile(object); err != nil || !bytes.Equal(b, newDoc) {
				t.Fatalf("object %s holds %d bytes (%v), want the document", object, len(b), err)
			}
			if b := download(t, h, newID); !bytes.Equal(b, newDoc) {
				t.Fatalf("the new message downloads as %d bytes, want %d", len(b), len(newDoc))
			}
			if b := download(t, h, oldID); !bytes.Equal(b, oldDoc) {
				t.Fatalf("the old message downloads as %q, want %q", b, oldDoc)
			}
			old, err := second.Store.GetPayload(ctx, oldID, persistence.PayloadUnpacked)
			if err != nil || strings.HasPrefix(old.Key, "s3:") {
				t.Fatalf("the old payload moved: %+v, %v", old, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "payloads", filepath.FromSlash(old.Key))); err != nil {
				t.Fatalf("the old payload left the local disk: %v", err)
			}
		})
	}
}

// TestStorageTestNamesFailure: the storage test names the step that failed and what the
// server answered, and never the credentials.
func TestStorageTestNamesFailure(t *testing.T) {
	srv := s3test.Start(t)
	tests := []struct {
		name     string
		settings map[string]string
		env      map[string]string // the AWS chain's variables for the test
		step     string
		code     string
		status   int
		message  string
	}{
		{"wrong bucket", map[string]string{"s3_bucket": "no-such-bucket", "s3_endpoint": srv.Endpoint}, nil,
			storage.StepWrite, "NoSuchBucket", http.StatusNotFound, ""},
		{"bad endpoint", map[string]string{"s3_bucket": srv.Bucket, "s3_endpoint": "http://127.0.0.1:" + fmt.Sprint(gatewaytest.FreePort(t))}, nil,
			storage.StepWrite, "", 0, "connection refused"},
		{"wrong secret", map[string]string{"s3_bucket": srv.Bucket, "s3_endpoint": srv.Endpoint},
			map[string]string{"AWS_SECRET_ACCESS_KEY": "wharf-wrong-secret"},
			storage.StepWrite, "SignatureDoesNotMatch", http.StatusForbidden, ""},
	}
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			h := startGateway(t, url, nil, nil)
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					values := map[string]string{"payload_storage": "s3", "s3_path_style": "true"}
					for k, v := range tc.settings {
						values[k] = v
					}
					h.mustJSON("PUT", "/api/v1/settings", values, nil)
					for k, v := range tc.env {
						t.Setenv(k, v)
					}
					res, body := testStorage(t, h)
					if res.OK || res.Step != tc.step || res.Code != tc.code || res.HTTPStatus != tc.status ||
						!strings.Contains(res.Message, tc.message) {
						t.Fatalf("result %s, want step %s, code %q, status %d, message with %q", body, tc.step, tc.code, tc.status, tc.message)
					}
					for _, secret := range []string{s3test.SecretKey, s3test.AccessKey, "wharf-wrong-secret"} {
						if strings.Contains(body, secret) {
							t.Fatalf("the result names a credential: %s", body)
						}
					}
				})
			}
		})
	}
}
