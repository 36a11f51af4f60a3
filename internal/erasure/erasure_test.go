package erasure_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"wharf/internal/erasure"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/storage"
	"wharf/internal/storage/s3test"
)

const canary = "CANARY-7f3a"

// payloadStores are the payload stores erasure is tested on: the local disk, and an S3
// bucket (skipped, saying so, without versitygw).
var payloadStores = []struct {
	name string
	open func(t *testing.T) *storage.Stores
}{
	{"local", func(t *testing.T) *storage.Stores { return stores(t, storage.KindLocal, nil) }},
	{"s3", func(t *testing.T) *storage.Stores {
		srv := s3test.Start(t)
		s3, err := storage.NewS3(context.Background(), storage.S3Config{Bucket: srv.Bucket, Endpoint: srv.Endpoint, PathStyle: true})
		if err != nil {
			t.Fatal(err)
		}
		return stores(t, storage.KindS3, s3)
	}},
}

// stores writes new blobs to the store kind names, beside a local one in a temporary
// directory.
func stores(t *testing.T, kind string, s3 *storage.S3) *storage.Stores {
	t.Helper()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewStores(kind, local, s3)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// delivered stores n messages from acme whose document holds the canary, with their
// blobs in blobs, and delivers them; it returns their payload records.
func delivered(t *testing.T, s *db.Store, blobs *storage.Stores, n int) []persistence.Payload {
	t.Helper()
	ctx := context.Background()
	for _, p := range []persistence.Party{{Kind: persistence.PartyOrganization, Name: "local"}, {Kind: persistence.PartyPartner, Name: "acme"}} {
		if _, err := s.CreateParty(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []persistence.PluginConfig{
		{Name: "poller", Type: persistence.PluginFilePoller, Enabled: true},
		{Name: "writer", Type: persistence.PluginFileWriter, Enabled: true},
	} {
		if _, err := s.CreatePluginConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.AllocateMessageIDs(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	var batch []persistence.NewMessage
	var out []persistence.Payload
	for i := range n {
		id := first + int64(i)
		doc := "invoice for " + canary
		sum := sha256.Sum256([]byte(doc))
		var ps []persistence.Payload
		for _, stage := range []persistence.PayloadStage{persistence.PayloadUnpacked, persistence.PayloadHeaders} {
			b, err := blobs.Put(ctx, id, stage, strings.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, persistence.Payload{MessageID: id, Stage: stage, Key: b.Key, Size: b.Size, SHA256: b.SHA256})
		}
		out = append(out, ps...)
		batch = append(batch, persistence.NewMessage{Message: persistence.Message{ID: id, From: "acme", To: "local", Source: "poller",
			OriginalFileName: persistence.FileName(canary + ".edi"), Size: int64(len(doc)), SHA256: hex.EncodeToString(sum[:]),
			CorrelationID: "c", OriginEventID: "e", Metadata: map[string]string{"subject": canary}},
			Payloads: ps, Dispatch: true, Targets: []persistence.InstanceName{"writer"}})
	}
	if _, err := s.InsertMessages(ctx, batch); err != nil {
		t.Fatal(err)
	}
	claims, err := s.ClaimDeliveries(ctx, "writer", n, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var cs []persistence.Completion
	for _, c := range claims {
		cs = append(cs, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeDelivered, At: time.Now()})
	}
	if _, err := s.CompleteDeliveries(ctx, cs); err != nil {
		t.Fatal(err)
	}
	return out
}

// wantGone fails unless none of the payloads' blobs can be opened.
func wantGone(t *testing.T, blobs *storage.Stores, ps []persistence.Payload) {
	t.Helper()
	for _, p := range ps {
		r, err := blobs.Open(context.Background(), p.Key)
		if err == nil {
			b, _ := io.ReadAll(r)
			r.Close()
			t.Fatalf("payload %s of message %d still readable: %q", p.Stage, p.MessageID, b)
		}
	}
}

func TestEraseRemovesPayloads(t *testing.T) {
	for _, ps := range payloadStores {
		t.Run(ps.name, func(t *testing.T) {
			dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
				blobs := ps.open(t)
				ctx := context.Background()
				payloads := delivered(t, s, blobs, 3)
				svc := erasure.New(s, blobs, nil)
				f := persistence.ErasureFilter{Party: "acme", From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)}
				if n, err := svc.Count(ctx, f); err != nil || n.Erasable != 3 {
					t.Fatalf("count = %+v, %v; want 3 erasable", n, err)
				}
				res, err := svc.Erase(ctx, f, "user:ann")
				if err != nil {
					t.Fatal(err)
				}
				if res.Erased != 3 || res.PayloadsRemoved != len(payloads) || res.InFlight != 0 {
					t.Fatalf("erasure = %+v, want 3 messages and %d payloads", res, len(payloads))
				}
				wantGone(t, blobs, payloads)
				for _, p := range payloads {
					if _, err := s.GetPayload(ctx, p.MessageID, p.Stage); !errors.Is(err, persistence.ErrNotFound) {
						t.Fatalf("payload record %s of message %d: %v, want not found", p.Stage, p.MessageID, err)
					}
				}
				if again, err := svc.Erase(ctx, f, "user:ann"); err != nil || again.Erased != 0 || again.AlreadyErased != 3 {
					t.Fatalf("second erasure = %+v, %v; want nothing erased, 3 already", again, err)
				}
			})
		})
	}
}

// A crash after the erasure's commit and before its blobs were deleted leaves payload
// records of erased messages; the next start's purge deletes them.
func TestPurgeFinishesAnInterruptedErasure(t *testing.T) {
	for _, ps := range payloadStores {
		t.Run(ps.name, func(t *testing.T) {
			dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
				blobs := ps.open(t)
				ctx := context.Background()
				payloads := delivered(t, s, blobs, 2)
				// The store's half only, as a process killed right after the commit leaves it.
				if err := s.EraseMessage(ctx, payloads[0].MessageID, "user:ann"); err != nil {
					t.Fatal(err)
				}
				if r, err := blobs.Open(ctx, payloads[0].Key); err != nil {
					t.Fatalf("the blob is gone before the purge: %v", err)
				} else {
					r.Close()
				}
				// One blob deleted and its record not yet: the purge deletes it again.
				if err := blobs.Delete(ctx, payloads[1].Key); err != nil {
					t.Fatal(err)
				}
				n, err := erasure.New(s, blobs, nil).Purge(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n != 2 {
					t.Fatalf("purge removed %d payloads, want the 2 of the erased message", n)
				}
				wantGone(t, blobs, payloads[:2])
				if left, err := s.ErasedPayloads(ctx, 10); err != nil || len(left) != 0 {
					t.Fatalf("payloads of erased messages after the purge: %v, %v", left, err)
				}
				// The other message keeps its payloads.
				if _, err := s.GetPayload(ctx, payloads[2].MessageID, payloads[2].Stage); err != nil {
					t.Fatalf("a message that was not erased lost its payload: %v", err)
				}
			})
		})
	}
}

// A payload recorded for a message after its erasure (a receipt that came late) is
// deleted by the running service's next purge.
func TestRunningServicePurgesLatePayloads(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		blobs := payloadStores[0].open(t)
		payloads := delivered(t, s, blobs, 1)
		svc := erasure.New(s, blobs, nil)
		svc.SetInterval(10 * time.Millisecond)
		if err := s.EraseMessage(ctx, payloads[0].MessageID, "user:ann"); err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop(context.Background()) })
		// Start finished the interrupted erasure at once.
		wantGone(t, blobs, payloads)

		b, err := blobs.Put(ctx, payloads[0].MessageID, persistence.PayloadReceipt, strings.NewReader("receipt for "+canary))
		if err != nil {
			t.Fatal(err)
		}
		late := persistence.Payload{MessageID: payloads[0].MessageID, Stage: persistence.PayloadReceipt, Key: b.Key, Size: b.Size, SHA256: b.SHA256}
		if err := s.AddPayload(ctx, late); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			left, err := s.ErasedPayloads(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the late receipt is still recorded: %+v", left)
			}
			time.Sleep(10 * time.Millisecond) // polling interval, not a wait for work
		}
		wantGone(t, blobs, []persistence.Payload{late})
		if err := svc.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
