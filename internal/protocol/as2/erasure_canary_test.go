package as2_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// canary is a string that appears only in what an erasure must remove: the document, its
// file name (and so the Subject header A's sender builds from it), and its metadata.
const canary = "CANARY-5eb3c0de"

// TestErasureLeavesNoCanary sends a document holding the canary from gateway A to
// gateway B over AS2 (signed, encrypted and compressed, with a signed MDN), erases A's
// outbound message and B's inbound one, and then finds the canary nowhere: not in any
// column of any table of either database, not in any file of either payload store, not
// in the bytes of an SQLite database file or its write-ahead log. The dashboards'
// counts are the same before and after.
func TestErasureLeavesNoCanary(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, url string) {
		a := startPeer(t, "WHARF-A", url)
		b := startPeer(t, "WHARF-B", url)
		connect(t, a, b)

		doc := []byte("UNB+UNOC:3+A+B'\nFTX+AAI+++delivery for " + canary + "'\nUNZ+1'\n")
		fileName := canary + ".edi"
		var sent messageView
		a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "b", "target": "as2_sender_default",
			"metadata": `{"note":"` + canary + `"}`}, fileName, doc, &sent)
		waitFinal(t, a, sent.ID)
		received := waitReceived(t, b, "a")
		waitFinal(t, b, received)
		for _, p := range []*peer{a, b} {
			// The content is checkpointed into the database file first, so the scan of
			// the file shows what the erasure leaves of pages, not only of the log.
			reclaim(t, p)
			if !containsCanary(t, p) || !fileHits(t, filepath.Join(p.data, "payloads")) ||
				(p.g.Store.Dialect() == db.DialectSQLite && !fileHits(t, filepath.Join(p.data, "wharf.db"))) {
				t.Fatalf("%s: the canary is not where the test put it: the scan cannot be trusted", p.name)
			}
		}
		beforeA, beforeB := dashboard(t, a), dashboard(t, b)

		// A erases its message by id; B erases everything of partner a today, after the
		// count its confirmation names.
		var erased struct {
			ErasedAt *time.Time `json:"erased_at"`
		}
		a.json("POST", fmt.Sprintf("/api/v1/messages/%d/erase", sent.ID), map[string]any{}, &erased)
		if erased.ErasedAt == nil {
			t.Fatal("A's message is not marked erased")
		}
		rng := map[string]any{"party": "a", "from": time.Now().Add(-time.Hour).UTC(), "to": time.Now().Add(time.Hour).UTC()}
		var dry map[string]any
		b.json("POST", "/api/v1/erasures?dry_run=true", rng, &dry)
		if dry["erasable"] != float64(1) {
			t.Fatalf("B's dry run = %v, want 1 erasable", dry)
		}
		var res map[string]any
		b.json("POST", "/api/v1/erasures", rng, &res)
		if res["erased"] != float64(1) || res["payloads_removed"].(float64) < 3 {
			t.Fatalf("B's erasure = %v, want 1 message and its payloads", res)
		}

		for _, p := range []*peer{a, b} {
			reclaim(t, p)
			scanDatabase(t, p)
			scanFiles(t, p.name+" payloads", filepath.Join(p.data, "payloads"))
			if p.g.Store.Dialect() == db.DialectSQLite {
				for _, f := range []string{"wharf.db", "wharf.db-wal"} {
					scanFile(t, p.name+" "+f, filepath.Join(p.data, f))
				}
			}
		}
		if afterA, afterB := dashboard(t, a), dashboard(t, b); !reflect.DeepEqual(beforeA, afterA) || !reflect.DeepEqual(beforeB, afterB) {
			t.Fatalf("the dashboards' counts changed:\nA %+v\n→ %+v\nB %+v\n→ %+v", beforeA, afterA, beforeB, afterB)
		}
		if status, body := a.gw.API("GET", fmt.Sprintf("/api/v1/messages/%d/payload", sent.ID), "", nil); status != 410 {
			t.Fatalf("download of an erased payload = %d %s", status, body)
		}
	})
}

// waitFinal polls until every delivery of the message is delivered.
func waitFinal(t *testing.T, p *peer, id int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var m messageView
		p.do("GET", fmt.Sprintf("/api/v1/messages/%d", id), "", nil, &m)
		if len(m.Deliveries) > 0 && m.Deliveries[0].State == "delivered" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: message %d not delivered: %+v", p.name, id, m.Deliveries)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for work
	}
}

// waitReceived polls until p holds a message from the party and returns its id.
func waitReceived(t *testing.T, p *peer, from string) int64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list struct {
			Messages []messageView `json:"messages"`
		}
		p.do("GET", "/api/v1/messages?from="+from, "", nil, &list)
		if len(list.Messages) == 1 {
			return list.Messages[0].ID
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s received %d messages from %s, want 1", p.name, len(list.Messages), from)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for work
	}
}

// dashboardCounts is what the dashboard counts.
type dashboardCounts struct {
	Statuses   []persistence.StatusCount
	Hours      []persistence.HourCount
	Deliveries map[persistence.DeliveryState]int
	Problems   []persistence.PartnerCount
}

func dashboard(t *testing.T, p *peer) dashboardCounts {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	var d dashboardCounts
	var err error
	if d.Statuses, err = p.g.Store.CountMessagesByStatus(ctx, now.Add(-24*time.Hour), now.Add(-7*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if d.Hours, err = p.g.Store.CountMessagesPerHour(ctx, now.Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if d.Deliveries, err = p.g.Store.CountDeliveriesByState(ctx); err != nil {
		t.Fatal(err)
	}
	if d.Problems, err = p.g.Store.CountProblemsByPartner(ctx, now.Add(-24*time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	return d
}

// reclaim has the database reclaim freed space; on SQLite a checkpoint waits for readers,
// so it is polled.
func reclaim(t *testing.T, p *peer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := p.g.Store.ReclaimFreedSpace(context.Background())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", p.name, err)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for work
	}
}

// hits finds the canary in b, as text or hex-encoded.
func hits(b []byte) bool {
	return bytes.Contains(b, []byte(canary)) || bytes.Contains(bytes.ToLower(b), []byte(hex.EncodeToString([]byte(canary))))
}

// tableRows calls fn with every table's name and each value of each of its rows.
func tableRows(t *testing.T, p *peer, fn func(table string, v any)) {
	t.Helper()
	ctx := context.Background()
	list := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if p.g.Store.Dialect() == db.DialectPostgres {
		list = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	}
	err := p.g.Store.ModuleSQL().Read(ctx, func(tx module.Tx) error {
		rows, err := tx.Query(ctx, list)
		if err != nil {
			return err
		}
		var tables []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			tables = append(tables, name)
		}
		rows.Close()
		if len(tables) < 20 {
			return fmt.Errorf("only %d tables listed: %v", len(tables), tables)
		}
		for _, table := range tables {
			rows, err := tx.Query(ctx, `SELECT * FROM "`+table+`"`)
			if err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					rows.Close()
					return fmt.Errorf("%s: %w", table, err)
				}
				for _, v := range vals {
					fn(table, v)
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: scan the database: %v", p.name, err)
	}
}

func valueHits(v any) bool {
	switch x := v.(type) {
	case string:
		return hits([]byte(x))
	case []byte:
		return hits(x)
	}
	return false
}

// containsCanary reports whether p's database holds the canary anywhere.
func containsCanary(t *testing.T, p *peer) bool {
	found := false
	tableRows(t, p, func(_ string, v any) { found = found || valueHits(v) })
	return found
}

func scanDatabase(t *testing.T, p *peer) {
	t.Helper()
	tableRows(t, p, func(table string, v any) {
		if valueHits(v) {
			t.Errorf("%s: table %s still holds the canary: %.300v", p.name, table, v)
		}
	})
}

func scanFiles(t *testing.T, what, root string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.Contains(path, canary) {
			t.Errorf("%s: a path names the canary: %s", what, path)
		}
		if d.Type().IsRegular() {
			n++
			scanFile(t, what, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: %d files scanned", what, n)
}

func scanFile(t *testing.T, what, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("%s: %v", what, err)
	}
	if hits(b) {
		t.Errorf("%s: %s holds the canary", what, path)
	}
}

// fileHits reports whether the file, or any file under the directory, holds the canary.
func fileHits(t *testing.T, root string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		found = found || hits(b)
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return found
}
