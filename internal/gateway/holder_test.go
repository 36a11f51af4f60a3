package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/gateway"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
)

const writerDefault = persistence.InstanceName("file_writer_default")

// setWriterEnabled turns the default file writer on or off before a gateway starts.
func setWriterEnabled(t *testing.T, on bool) func(g *gateway.Gateway) {
	return func(g *gateway.Gateway) {
		ctx := context.Background()
		rec, err := g.Store.GetPluginConfig(ctx, writerDefault)
		if err != nil {
			t.Fatal(err)
		}
		rec.Enabled = on
		if _, err := g.Store.UpdatePluginConfig(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestartReleasesOwnClaims: a run that ends holding a claim (as a killed process
// does) leaves the delivery delivering under a lease of an hour; the next start on the
// same data directory hands it back at once, and the file is written long before the
// lease would run out.
func TestRestartReleasesOwnClaims(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			url := dbtest.ResolveURL(t, url) // both runs open the same database
			first := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, DataDir: dir, Prepare: setWriterEnabled(t, false)})
			if _, err := first.Store.CreateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: "acme"}); err != nil {
				t.Fatal(err)
			}
			res, err := first.Dispatcher.Ingest(ctx, []module.Incoming{{
				Source: "file_poller_default", From: "acme", To: "local", FileName: "order.edi",
				Body: strings.NewReader("UNB+1"), Target: writerDefault,
			}})
			if err != nil || res[0].Err != nil {
				t.Fatalf("ingest: %v %v", err, res[0].Err)
			}
			claims, err := first.Store.ClaimDeliveries(ctx, writerDefault, 1, time.Hour, time.Now())
			if err != nil || len(claims) != 1 {
				t.Fatalf("claim: %v, %d claims", err, len(claims))
			}
			if err := first.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}

			second := gatewaytest.Start(t, gatewaytest.Options{DBURL: url, DataDir: dir, Prepare: setWriterEnabled(t, true)})
			out := filepath.Join(dir, "inbox", "acme", "order.edi")
			deadline := time.Now().Add(30 * time.Second)
			for {
				d, err := second.Store.GetDelivery(ctx, claims[0].Delivery.ID)
				if err != nil {
					t.Fatal(err)
				}
				if d.State == persistence.DeliveryDelivered {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("delivery still %s after the restart (lease until %v)", d.State, d.LeaseUntil)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if b, err := os.ReadFile(out); err != nil || string(b) != "UNB+1" {
				t.Fatalf("written file: %q, %v", b, err)
			}
		})
	}
}
