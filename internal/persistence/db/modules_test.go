package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

func widgetSchema(versions ...string) db.ModuleSchema {
	fsys := fstest.MapFS{}
	for i, v := range versions {
		name := []string{"0001_a.sql", "0002_b.sql", "0003_c.sql"}[i]
		fsys["sqlite/"+name] = &fstest.MapFile{Data: []byte(v)}
		fsys["postgres/"+name] = &fstest.MapFile{Data: []byte(strings.ReplaceAll(v, "made_at TEXT", "made_at TIMESTAMPTZ"))}
	}
	return db.ModuleSchema{Name: "widgets", FS: fsys}
}

func TestModuleSchemaAndSQL(t *testing.T) {
	mods := []db.ModuleSchema{widgetSchema(
		"CREATE TABLE widgets (name TEXT PRIMARY KEY, made_at TEXT NOT NULL);",
		"CREATE TABLE widget_parts (widget TEXT NOT NULL, part TEXT NOT NULL);",
	)}
	dbtest.ForEachModules(t, mods, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		q := s.ModuleSQL()
		var wrote time.Time
		must(t, q.Write(ctx, func(tx module.Tx) error {
			wrote = tx.Now()
			_, err := tx.Exec(ctx, `INSERT INTO widgets (name, made_at) VALUES (?, ?)`, "cog", tx.Time(wrote))
			return err
		}))
		err := q.Write(ctx, func(tx module.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO widgets (name, made_at) VALUES (?, ?)`, "cog", tx.Time(wrote))
			if !tx.IsUniqueViolation(err) {
				t.Errorf("second insert: %v, want a unique violation", err)
			}
			return err
		})
		if err == nil {
			t.Fatal("duplicate insert committed")
		}
		var got time.Time
		var n int
		must(t, q.Read(ctx, func(tx module.Tx) error {
			if err := tx.QueryRow(ctx, `SELECT made_at FROM widgets WHERE name = ?`, "cog").Scan(tx.ScanTime(&got)); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `SELECT COUNT(*) FROM widget_parts`).Scan(&n)
		}))
		if !got.Equal(wrote) || n != 0 {
			t.Fatalf("read back %v and %d parts, want %v and 0", got, n, wrote)
		}
	})
}

func TestModuleSchemaRefusals(t *testing.T) {
	gap := widgetSchema("CREATE TABLE a (x INTEGER);")
	gap.FS.(fstest.MapFS)["sqlite/0003_c.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE c (x INTEGER);")}
	for _, tc := range []struct {
		name string
		mod  db.ModuleSchema
		want string
	}{
		{"gap", gap, "expected version 2"},
		{"bad name", db.ModuleSchema{Name: "Bad Name", FS: fstest.MapFS{}}, "module name"},
		{"bad sql", widgetSchema("CREATE TABLE (;"), "apply schema 0001_a.sql of module widgets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.Open(context.Background(), db.Options{SQLitePath: t.TempDir() + "/w.db", Modules: []db.ModuleSchema{tc.mod}, AuditKey: dbtest.AuditKey})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestModuleSchemaAppliedOnceAndNewerRefused(t *testing.T) {
	path := t.TempDir() + "/w.db"
	ctx := context.Background()
	two := widgetSchema("CREATE TABLE a (x INTEGER);", "CREATE TABLE b (x INTEGER);")
	for range 2 { // the second open finds both versions applied
		s, err := db.Open(ctx, db.Options{SQLitePath: path, Modules: []db.ModuleSchema{two}, AuditKey: dbtest.AuditKey})
		must(t, err)
		s.Close()
	}
	_, err := db.Open(ctx, db.Options{SQLitePath: path, Modules: []db.ModuleSchema{widgetSchema("CREATE TABLE a (x INTEGER);")}, AuditKey: dbtest.AuditKey})
	if err == nil || !strings.Contains(err.Error(), "knows only up to 1") {
		t.Fatalf("older binary: %v, want refusal", err)
	}
}

func TestSettleDelivery(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		ms := insert(t, s, 3, writer)
		cs := claimAll(t, s, writer, now)
		// awaiting_ack → delivered by a good receipt.
		complete(t, s, persistence.Completion{DeliveryID: cs[0].Delivery.ID, Token: cs[0].Delivery.ClaimToken,
			Kind: persistence.OutcomeAwaitingAck, AckDeadline: now.Add(time.Hour)})
		d := must1[persistence.Delivery](t)(s.SettleDelivery(ctx, cs[0].Delivery.ID, true, "processed", "as2:mdn"))
		if d.State != persistence.DeliveryDelivered {
			t.Fatalf("settled = %s", d.State)
		}
		wantStatus(t, s, ms[0].ID, persistence.StageSettled, persistence.StatusDelivered)
		// A later refusal does not downgrade it.
		d = must1[persistence.Delivery](t)(s.SettleDelivery(ctx, cs[0].Delivery.ID, false, "late failure", "as2:mdn"))
		if d.State != persistence.DeliveryDelivered {
			t.Fatalf("downgraded to %s", d.State)
		}

		// delivering → failed; the worker's later outcome finds its claim gone.
		d = must1[persistence.Delivery](t)(s.SettleDelivery(ctx, cs[1].Delivery.ID, false, "processed/error: decryption-failed", "as2:mdn"))
		if d.State != persistence.DeliveryFailed || d.LastError != "processed/error: decryption-failed" {
			t.Fatalf("settled = %s %q", d.State, d.LastError)
		}
		errs := complete(t, s, persistence.Completion{DeliveryID: cs[1].Delivery.ID, Token: cs[1].Delivery.ClaimToken, Kind: persistence.OutcomeDelivered})
		if !errors.Is(errs[0], persistence.ErrLostClaim) {
			t.Fatalf("late completion = %v, want ErrLostClaim", errs[0])
		}
		d = must1[persistence.Delivery](t)(s.SettleDelivery(ctx, cs[1].Delivery.ID, true, "", "as2:mdn"))
		if d.State != persistence.DeliveryFailed || d.LastError != "processed/error: decryption-failed" {
			t.Fatalf("first failure did not stand: %s %q", d.State, d.LastError)
		}
		h := kinds(history(t, s, ms[1].ID))
		if !strings.Contains(strings.Join(h, " "), string(persistence.HistoryReceiptRefused)) {
			t.Fatalf("history %v lacks the refused receipt", h)
		}

		// queued is not awaiting a receipt; a missing delivery is not found.
		m := insert(t, s, 1, writer)[0]
		_, err := s.SettleDelivery(ctx, deliveriesOf(t, s, m.ID)[0].ID, true, "", "x")
		wantErr(t, err, persistence.ErrConflict)
		_, err = s.SettleDelivery(ctx, 999999, true, "", "x")
		wantErr(t, err, persistence.ErrNotFound)
		checkInvariants(t, s)
	})
}

func TestNoteHistory(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		m := insert(t, s, 1, writer)[0]
		must(t, s.NoteHistory(ctx, m.ID, persistence.HistoryDuplicateReceived, "received again; the stored MDN was sent again", "as2:in"))
		h := history(t, s, m.ID)
		last := h[len(h)-1]
		if last.Kind != persistence.HistoryDuplicateReceived || last.Reason != "received again; the stored MDN was sent again" || last.Actor != "as2:in" || last.DeliveryID != nil {
			t.Fatalf("last history line = %+v", last)
		}
		wantField(t, s.NoteHistory(ctx, m.ID, persistence.HistoryDeliveryChanged, "x", "y"), "kind")
		wantErr(t, s.NoteHistory(ctx, 999999, persistence.HistoryDuplicateReceived, "x", "y"), persistence.ErrNotFound)
	})
}

func TestCompletionsRecordPayloads(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		ms := insert(t, s, 2, writer)
		cs := claimAll(t, s, writer, now)
		receipt := func(m int64, key string) []persistence.Payload {
			return []persistence.Payload{{MessageID: m, Stage: persistence.PayloadReceipt, Key: key, Size: 3, SHA256: hashOf(key)}}
		}
		errs := complete(t, s,
			persistence.Completion{DeliveryID: cs[0].Delivery.ID, Token: cs[0].Delivery.ClaimToken, Kind: persistence.OutcomeDelivered,
				Payloads: receipt(ms[0].ID, "first")},
			// A lost claim records nothing of the outcome but keeps the receipt.
			persistence.Completion{DeliveryID: cs[1].Delivery.ID, Kind: persistence.OutcomeDelivered, Payloads: receipt(ms[1].ID, "second")},
		)
		if errs[0] != nil || !errors.Is(errs[1], persistence.ErrLostClaim) {
			t.Fatalf("results = %v", errs)
		}
		wantState(t, s, cs[0].Delivery.ID, persistence.DeliveryDelivered)
		wantState(t, s, cs[1].Delivery.ID, persistence.DeliveryDelivering)
		for i, key := range []string{"first", "second"} {
			p := must1[persistence.Payload](t)(s.GetPayload(ctx, ms[i].ID, persistence.PayloadReceipt))
			if p.Key != key {
				t.Fatalf("receipt of message %d = %+v", ms[i].ID, p)
			}
		}
		// A stage the message has is left as it is.
		complete(t, s, persistence.Completion{DeliveryID: cs[1].Delivery.ID, Token: cs[1].Delivery.ClaimToken,
			Kind: persistence.OutcomeDelivered, Payloads: receipt(ms[1].ID, "third")})
		if p := must1[persistence.Payload](t)(s.GetPayload(ctx, ms[1].ID, persistence.PayloadReceipt)); p.Key != "second" {
			t.Fatalf("receipt replaced by %q", p.Key)
		}
		checkInvariants(t, s)
	})
}
