package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
)

// TestRestartFinishesAnInterruptedErasure: a process stopped after an erasure's commit and
// before its blobs were deleted (the store's half alone) leaves the blob on disk; the next
// start deletes it before it serves.
func TestRestartFinishesAnInterruptedErasure(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			url := dbtest.ResolveURL(t, url) // both runs open the same database
			dir := t.TempDir()
			first := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, DataDir: dir, Settings: fast})
			h := &harness{t: t, g: first.Gateway, gw: first, data: dir}
			h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
			h.mustJSON("POST", "/api/v1/routes", map[string]any{"source": "file_poller_default", "from": "*", "to": "acme", "target": "file_writer_default"}, nil)
			id := dropFile(t, h, "secret.edi", []byte("UNB+SECRET'"))
			p, err := first.Store.GetPayload(ctx, id, persistence.PayloadUnpacked)
			if err != nil {
				t.Fatal(err)
			}
			blob := filepath.Join(dir, "payloads", filepath.FromSlash(p.Key))
			if err := first.Store.EraseMessage(ctx, id, "user:ann"); err != nil {
				t.Fatal(err)
			}
			if err := first.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(blob); err != nil {
				t.Fatalf("the blob is gone before the restart: %v", err)
			}

			second := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, DataDir: dir})
			if _, err := os.Stat(blob); !os.IsNotExist(err) {
				t.Fatalf("after the restart the blob of the erased message is still there: %v", err)
			}
			if ps, err := second.Store.ListPayloads(ctx, id); err != nil || len(ps) != 0 {
				t.Fatalf("payload records after the restart: %v, %v", ps, err)
			}
		})
	}
}
