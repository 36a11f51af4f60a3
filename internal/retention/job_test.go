package retention_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/retention"
	"wharf/internal/storage"
)

// openStore opens a fresh store of dialect on c with acme, local and the poller.
func openStore(t *testing.T, dialect string, c *dbtest.Clock) *db.Store {
	t.Helper()
	ctx := context.Background()
	opt := db.Options{AuditKey: dbtest.AuditKey, Now: c.Now, Logger: slog.New(slog.DiscardHandler)}
	if dialect == db.DialectSQLite {
		opt.SQLitePath = filepath.Join(t.TempDir(), "wharf.db")
	} else {
		opt.URL = dbtest.PostgresURL(t)
	}
	s, err := db.Open(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, p := range []persistence.Party{{Kind: persistence.PartyOrganization, Name: "local"}, {Kind: persistence.PartyPartner, Name: "acme"}} {
		if _, err := s.CreateParty(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: "poller", Type: persistence.PluginFilePoller, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	return s
}

// newBlobs is payload storage on a temporary local directory.
func newBlobs(t *testing.T) *storage.Stores {
	t.Helper()
	local, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := storage.NewStores(storage.KindLocal, local, nil)
	if err != nil {
		t.Fatal(err)
	}
	return blobs
}

// storeWithBlobs inserts settled messages whose documents are real blobs, in one batch.
func storeWithBlobs(t *testing.T, s *db.Store, blobs *storage.Stores, ids ...int64) []storage.Blob {
	t.Helper()
	ctx := context.Background()
	var out []storage.Blob
	var batch []persistence.NewMessage
	for _, id := range ids {
		blob, err := blobs.Put(ctx, id, persistence.PayloadUnpacked, strings.NewReader(fmt.Sprintf("document %d", id)), storage.DeferSync(), storage.DeferDirSync())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, blob)
		batch = append(batch, persistence.NewMessage{
			Message: persistence.Message{ID: id, From: "acme", To: "local", Source: "poller", OriginalFileName: "order.edi",
				Size: blob.Size, SHA256: blob.SHA256, CorrelationID: "c", OriginEventID: "e"},
			Payloads: []persistence.Payload{{Stage: persistence.PayloadUnpacked, Key: blob.Key, Size: blob.Size, SHA256: blob.SHA256}},
			Dispatch: true,
		})
	}
	if _, err := s.InsertMessages(ctx, batch); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestJobDeletesExpiredPayloadBlobs(t *testing.T) {
	for _, dialect := range dbtest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			start := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
			c := dbtest.NewClock(start)
			s := openStore(t, dialect, c)
			blobs := newBlobs(t)
			ids := make([]int64, retention.Batch+2)
			for i := range ids {
				ids[i] = int64(i + 1)
			}
			old := storeWithBlobs(t, s, blobs, ids...)
			c.Set(start.Add(20 * 24 * time.Hour))
			fresh := storeWithBlobs(t, s, blobs, retention.Batch+3)[0]
			c.Set(start.Add(31 * 24 * time.Hour))

			job := retention.New(s, blobs, slog.New(slog.DiscardHandler), func(context.Context) persistence.Retention {
				return persistence.Retention{PayloadDays: 30, HistoryDays: 0}
			})
			job.Pause, job.Now = 0, c.Now
			rep, err := job.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Payloads != len(old) || rep.Blobs != len(old) || rep.HistoryLines != 0 {
				t.Fatalf("report %+v, want %d payloads and blobs, no history", rep, len(old))
			}
			for _, b := range []storage.Blob{old[0], old[len(old)-1]} {
				if _, err := blobs.Open(ctx, b.Key); !errors.Is(err, storage.ErrNotFound) {
					t.Errorf("blob %s: %v, want it gone", b.Key, err)
				}
			}
			r, err := blobs.Open(ctx, fresh.Key)
			if err != nil {
				t.Fatalf("the fresh message's blob: %v", err)
			}
			r.Close()
			if m, err := s.GetMessage(ctx, 1); err != nil || m.Status != persistence.StatusNotRouted {
				t.Errorf("pruned message %+v, %v; want it kept", m, err)
			}
			if h, err := s.ListHistory(ctx, 1); err != nil || len(h) == 0 {
				t.Errorf("history of message 1 = %v, %v; want it kept for ever", h, err)
			}
			// A second run finds nothing more.
			if rep, err := job.Run(ctx); err != nil || rep.Payloads != 0 {
				t.Errorf("second run %+v, %v", rep, err)
			}
		})
	}
}

func TestJobRunsOnlyInTheActiveSweeper(t *testing.T) {
	for _, active := range []bool{false, true} {
		t.Run(fmt.Sprintf("active=%v", active), func(t *testing.T) {
			ctx := context.Background()
			start := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
			c := dbtest.NewClock(start)
			s := openStore(t, db.DialectSQLite, c)
			blobs := newBlobs(t)
			storeWithBlobs(t, s, blobs, 1)
			c.Set(start.Add(31 * 24 * time.Hour))
			job := retention.New(s, blobs, slog.New(slog.DiscardHandler), func(context.Context) persistence.Retention {
				return persistence.Retention{PayloadDays: 30}
			})
			job.Now = c.Now
			asked := make(chan struct{}, 1)
			job.Active = func(context.Context) bool {
				select {
				case asked <- struct{}{}:
				default:
				}
				return active
			}
			if err := job.Start(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case <-asked:
			case <-time.After(10 * time.Second):
				t.Fatal("the job never asked whether it is the active sweeper")
			}
			if active {
				deadline := time.Now().Add(10 * time.Second)
				for {
					ps, err := s.ListPayloads(ctx, 1)
					if err != nil {
						t.Fatal(err)
					}
					if len(ps) == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the active sweeper's job did not prune")
					}
					runtime.Gosched()
				}
			}
			if err := job.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			ps, err := s.ListPayloads(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !active && len(ps) != 1 {
				t.Errorf("a standby pruned: %d payloads left", len(ps))
			}
		})
	}
}
