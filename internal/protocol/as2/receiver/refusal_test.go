package receiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/alert"
	"wharf/internal/alert/alerttest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/settings"
)

// reopenable returns a function that opens the same database of the dialect each time
// it is called, so a test can close its store and open it again as a restart would.
func reopenable(t *testing.T, dialect string) func() *db.Store {
	opts := db.Options{Logger: slog.New(slog.DiscardHandler), Modules: schema(), AuditKey: dbtest.AuditKey}
	if dialect == db.DialectSQLite {
		opts.SQLitePath = filepath.Join(t.TempDir(), "wharf.db")
	} else {
		opts.URL = dbtest.PostgresURL(t)
	}
	return func() *db.Store {
		s, err := db.Open(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// A message refused for its content is kept as a message with status refused: partner
// and organization, the AS2 ids and Message-ID, the reason in plain words, the
// disposition, and the headers, raw body and MDN as stages. The record survives a
// restart of the store; the same Message-ID refused again is counted on the record
// rather than kept twice; the raw body is kept up to refused_body_max_mib, a longer one
// cut short and marked so.
func TestRefusedMessagesKept(t *testing.T) {
	org, partner, stranger := testParty(t, "wharf"), testParty(t, "acme"), testParty(t, "mallory")
	payload := []byte("UNH+1+ORDERS:D:96A:UN'\r\n")
	type sent struct {
		req         request
		disposition string
		plain       string // a part of the reason
		cutShort    bool
	}
	for _, dialect := range dbtest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			open := reopenable(t, dialect)
			s := open()
			b := newBench(t, s, []party{org}, []party{partner})
			dir := newDirectory()
			dir.add(inbound(org, partner, nil))
			rc := b.start("as2_in", dir, nil)

			badSignature := secureOpts(partner, org)
			badSignature.Sign = &mime.Signer{Certificate: stranger.cert, Key: stranger.key, Digest: cms.SHA256}
			unsigned := secureOpts(partner, org)
			unsigned.Sign = nil
			good := build(t, partner, org, payload, "orders.edi", secureOpts(partner, org))
			if m := parseMDN(t, post(t, rc.url(), good.contentType, good.header, good.body), org.cert); !m.Disposition.Successful() {
				t.Fatalf("good message: %s", m.Disposition)
			}
			replay := good
			replay.header = good.header.Clone()
			replay.header.Set("Message-ID", "<replayed@attacker.example>")

			cases := []sent{
				{build(t, partner, org, payload, "orders.edi", badSignature), "authentication-failed", "signature could not be verified", false},
				{build(t, partner, org, payload, "orders.edi", secureOpts(partner, stranger)), "decryption-failed", "could not be decrypted", false},
				{replay, "duplicate-document", "repeats one received before", false},
				{build(t, partner, org, bytes.Repeat(payload, (3<<20)/len(payload)), "orders.edi", unsigned), "insufficient-message-security", "not protected as the partner profile demands", true},
			}
			for i, c := range cases {
				if c.cutShort {
					// The last one, of some 4 MiB, is kept cut short.
					if err := s.PutSetting(b.ctx, settings.RefusedBodyMaxMiB, "1"); err != nil {
						t.Fatal(err)
					}
				}
				m := parseMDN(t, post(t, rc.url(), c.req.contentType, c.req.header, c.req.body), org.cert)
				if got := m.Disposition.ModifierText(); got != c.disposition {
					t.Fatalf("case %d: disposition %q, want %q", i, got, c.disposition)
				}
			}
			// The partner sends the refused message again.
			again := cases[0].req
			if m := parseMDN(t, post(t, rc.url(), again.contentType, again.header, again.body), org.cert); m.Disposition.Successful() {
				t.Fatalf("resend: %s", m.Disposition)
			}

			// A restart: the receiver stops, the store is closed and opened again.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := rc.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s = open()

			refused, total, err := s.ListMessages(b.ctx, persistence.MessageFilter{Status: persistence.StatusRefused})
			if err != nil || total != len(cases) {
				t.Fatalf("%d refused messages (%v), want %d", total, err, len(cases))
			}
			byOrigin := map[string]persistence.Message{}
			for _, m := range refused {
				byOrigin[m.OriginEventID] = m
			}
			for i, c := range cases {
				id := c.req.header.Get("Message-ID")
				m, ok := byOrigin[id]
				if !ok {
					t.Fatalf("case %d: no refused message for %s", i, id)
				}
				if m.From != partner.name || m.To != org.name || m.Source != "as2_in" || m.Size != 0 {
					t.Errorf("case %d: message %+v", i, m)
				}
				rec, err := FindRefusal(b.ctx, s.ModuleSQL(), m.ID)
				if err != nil {
					t.Fatalf("case %d: %v", i, err)
				}
				if rec.AS2From != "ACME" || rec.AS2To != "WHARF" || rec.AS2MessageID != id || rec.MDNMode != "sync" ||
					!strings.HasSuffix(rec.Disposition, "processed/error: "+c.disposition) || !strings.Contains(rec.Reason, c.plain) ||
					rec.MDNMessageID == "" || rec.BodySize != int64(len(c.req.body)) || rec.BodyCutShort != c.cutShort {
					t.Errorf("case %d: record %+v", i, rec)
				}
				hist, err := s.ListHistory(b.ctx, m.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !historyHas(hist, c.plain) || !historyHas(hist, "refused: the ") {
					t.Errorf("case %d: the history does not give the reason: %+v", i, hist)
				}
				b.store = s
				if h := b.payload(m.ID, persistence.PayloadHeaders); !bytes.Contains(h, []byte("Message-Id: "+id)) {
					t.Errorf("case %d: headers stage:\n%s", i, h)
				}
				if r := b.payload(m.ID, persistence.PayloadReceipt); !bytes.Contains(r, []byte(rec.MDNMessageID)) || !bytes.Contains(r, []byte(c.disposition)) {
					t.Errorf("case %d: the receipt stage is not the MDN answered", i)
				}
				want := c.req.body
				if c.cutShort {
					want = want[:1<<20]
				}
				if got := b.payload(m.ID, persistence.PayloadReceived); !bytes.Equal(got, want) || rec.BodyKept != int64(len(got)) {
					t.Errorf("case %d: received stage of %d bytes, want the %d sent", i, len(got), len(c.req.body))
				}
			}
			first, err := FindRefusal(b.ctx, s.ModuleSQL(), byOrigin[again.header.Get("Message-ID")].ID)
			if err != nil || first.Count != 2 {
				t.Errorf("the resent refusal counts %d (%v), want 2", first.Count, err)
			}
			hist, err := s.ListHistory(b.ctx, byOrigin[again.header.Get("Message-ID")].ID)
			if err != nil || !historyHas(hist, "received again and refused") {
				t.Errorf("the resend is not in the history (%v): %+v", err, hist)
			}
		})
	}
}

func historyHas(hist []persistence.HistoryEntry, text string) bool {
	for _, h := range hist {
		if strings.Contains(h.Reason, text) {
			return true
		}
	}
	return false
}

// downIngest fails every batch, as a store out of reach does.
type downIngest struct{}

func (downIngest) Ingest(context.Context, []module.Incoming) ([]module.IngestResult, error) {
	return nil, errors.New("database unreachable")
}

// A refusal the store cannot take still reaches someone: the partner gets its MDN and
// message_refused is raised, naming the partner, the Message-ID and why it was not kept.
func TestRefusalNotRecordedRaisesAlert(t *testing.T) {
	org, partner, stranger := testParty(t, "wharf"), testParty(t, "acme"), testParty(t, "mallory")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		alerts := &alerttest.Recorder{}
		rc := b.start("as2_in", dir, func(_ *Config, d *Deps) { d.Alerts = alerts; d.Ingest = downIngest{} })
		badSignature := secureOpts(partner, org)
		badSignature.Sign = &mime.Signer{Certificate: stranger.cert, Key: stranger.key, Digest: cms.SHA256}
		req := build(t, partner, org, []byte("UNH+1'"), "orders.edi", badSignature)
		if m := parseMDN(t, post(t, rc.url(), req.contentType, req.header, req.body), org.cert); m.Disposition.ModifierText() != "authentication-failed" {
			t.Fatalf("disposition %s, want authentication-failed", m.Disposition)
		}
		var got []alert.Alert
		for _, a := range alerts.Alerts() {
			if a.Code == alert.MessageRefused {
				got = append(got, a)
			}
		}
		if len(got) != 1 {
			t.Fatalf("%d message_refused alerts, want 1: %+v", len(got), alerts.Alerts())
		}
		details := fmt.Sprint(got[0].Details)
		for _, want := range []string{"acme", req.header.Get("Message-ID"), "authentication-failed", "database unreachable"} {
			if !strings.Contains(details, want) {
				t.Errorf("alert details %s lack %q", details, want)
			}
		}
		if got[0].DedupeKey != alert.RefusalKey("acme") {
			t.Errorf("dedupe key %q, want the partner's", got[0].DedupeKey)
		}
	})
}
