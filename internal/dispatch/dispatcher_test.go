package dispatch_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"wharf/internal/dispatch"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/storage"
)

type noWake struct{}

func (noWake) Wake([]persistence.InstanceName) {}

// newDispatcher is a dispatcher over s and a blob store in a temporary directory, with
// the partner acme and the organization local.
func newDispatcher(t *testing.T, s *db.Store) (*dispatch.Dispatcher, *storage.Local) {
	t.Helper()
	ctx := context.Background()
	blobs, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seed(ctx, persistence.SeedData{Organizations: []persistence.Party{{Kind: persistence.PartyOrganization, Name: "local"}}}); err != nil {
		t.Fatal(err)
	}
	return dispatch.New(s, blobs, noWake{}, slog.New(slog.DiscardHandler)), blobs
}

func TestIngestStoresExtraStages(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		d, blobs := newDispatcher(t, s)
		bodies := map[persistence.PayloadStage]string{
			persistence.PayloadUnpacked: "the document",
			persistence.PayloadReceived: "the raw request",
			persistence.PayloadHeaders:  "AS2-From: ACME\r\n",
		}
		good := module.Incoming{Source: "as2_in", From: "acme", To: "local", FileName: "a.edi",
			Body: strings.NewReader(bodies[persistence.PayloadUnpacked]),
			Extra: []module.ExtraPayload{
				{Stage: persistence.PayloadReceived, Body: strings.NewReader(bodies[persistence.PayloadReceived])},
				{Stage: persistence.PayloadHeaders, Body: strings.NewReader(bodies[persistence.PayloadHeaders])},
			}}
		twice := module.Incoming{Source: "as2_in", From: "acme", To: "local", FileName: "b.edi", Body: strings.NewReader("x"),
			Extra: []module.ExtraPayload{{Stage: persistence.PayloadUnpacked, Body: strings.NewReader("y")}}}
		res, err := d.Ingest(ctx, []module.Incoming{good, twice})
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Err != nil || res[1].Err == nil || !strings.Contains(res[1].Err.Error(), "given twice") {
			t.Fatalf("results = %v, %v", res[0].Err, res[1].Err)
		}
		ps, err := s.ListPayloads(ctx, res[0].Message.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 3 {
			t.Fatalf("payloads = %+v, want three stages", ps)
		}
		for _, p := range ps {
			want := bodies[p.Stage]
			sum := sha256.Sum256([]byte(want))
			rc, err := blobs.Open(ctx, p.Key)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if string(got) != want || p.SHA256 != hex.EncodeToString(sum[:]) || p.Size != int64(len(want)) {
				t.Errorf("stage %s: %q (%s, %d), want %q", p.Stage, got, p.SHA256, p.Size, want)
			}
		}
		if n, _, err := s.ListMessages(ctx, persistence.MessageFilter{}); err != nil || len(n) != 1 {
			t.Fatalf("messages = %d, %v; the refused item must leave nothing", len(n), err)
		}
	})
}

// A document its source refused is kept as a record: status refused, no deliveries, the
// reason on its history, the request as its stages, and no document. It is not the
// message FindMessageByOrigin reports, so an accepted copy sent later is not taken for
// one stored already.
func TestIngestKeepsRefusedRecord(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		d, _ := newDispatcher(t, s)
		refused := module.Incoming{Source: "as2_in", From: "acme", To: "local", FileName: "a.edi",
			OriginEventID: "<m1@acme>", Refused: "the signature does not verify",
			Extra: []module.ExtraPayload{{Stage: persistence.PayloadReceived, Body: strings.NewReader("raw")}}}
		res, err := d.Ingest(ctx, []module.Incoming{refused})
		if err != nil || res[0].Err != nil {
			t.Fatalf("ingest = %v, %v", err, res[0].Err)
		}
		m, err := s.GetMessage(ctx, res[0].Message.ID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != persistence.StatusRefused || m.Size != 0 || m.SHA256 != "" {
			t.Fatalf("message = %+v, want refused without a document", m)
		}
		ps, err := s.ListPayloads(ctx, m.ID)
		if err != nil || len(ps) != 1 || ps[0].Stage != persistence.PayloadReceived {
			t.Fatalf("payloads = %+v, %v; want the received stage alone", ps, err)
		}
		hist, err := s.ListHistory(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, h := range hist {
			found = found || strings.Contains(h.Reason, "refused: the signature does not verify")
		}
		if !found {
			t.Errorf("history %+v does not give the reason", hist)
		}
		if _, err := s.FindMessageByOrigin(ctx, "as2_in", "<m1@acme>"); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("find by origin = %v, want not found for a refused record", err)
		}
		good := refused
		good.Refused, good.Extra, good.Body = "", nil, strings.NewReader("doc")
		res, err = d.Ingest(ctx, []module.Incoming{good})
		if err != nil || res[0].Err != nil {
			t.Fatalf("ingest = %v, %v", err, res[0].Err)
		}
		if got, err := s.FindMessageByOrigin(ctx, "as2_in", "<m1@acme>"); err != nil || got.ID != res[0].Message.ID {
			t.Fatalf("find by origin = %d, %v; want the accepted message %d", got.ID, err, res[0].Message.ID)
		}
	})
}
