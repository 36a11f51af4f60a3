package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/storage"
)

// memIngester stores what it gets in memory, one "transaction" per call.
type memIngester struct {
	mu             sync.Mutex
	stored         []storedDoc
	nextID         int64
	unknown        map[persistence.PartyName]bool
	fail           error  // refuse whole batches
	commitThenFail error  // store the batch, then report this error
	crash          string // "before" or "after" commit: panic as if the process died
	block          chan struct{}
	entered        chan struct{}
	lookupErr      error
}

type storedDoc struct {
	module.Incoming
	Data []byte
}

type crashed struct{}

func newMemIngester() *memIngester {
	return &memIngester{unknown: map[persistence.PartyName]bool{}}
}

func (m *memIngester) Ingest(ctx context.Context, items []module.Incoming) ([]module.IngestResult, error) {
	if m.entered != nil {
		m.entered <- struct{}{}
	}
	if m.block != nil {
		<-m.block
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	if m.crash == "before" {
		panic(crashed{})
	}
	results := make([]module.IngestResult, len(items))
	var batch []storedDoc
	for i, it := range items {
		for _, p := range []persistence.PartyName{it.From, it.To} {
			if m.unknown[p] {
				results[i].Err = fmt.Errorf("party %s: %w", p, module.ErrUnknownParty)
			}
		}
		if results[i].Err != nil {
			continue
		}
		data, err := io.ReadAll(it.Body)
		if err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		m.nextID++
		results[i].Message = persistence.Message{ID: m.nextID, From: it.From, To: it.To, Source: it.Source, OriginalFileName: it.FileName, OriginEventID: it.OriginEventID}
		it.Body = nil
		batch = append(batch, storedDoc{Incoming: it, Data: data})
	}
	m.stored = append(m.stored, batch...)
	if m.crash == "after" {
		panic(crashed{})
	}
	if m.commitThenFail != nil {
		return nil, m.commitThenFail
	}
	return results, nil
}

func (m *memIngester) MessageExists(ctx context.Context, source persistence.InstanceName, originEventID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lookupErr != nil {
		return false, m.lookupErr
	}
	for _, d := range m.stored {
		if d.Source == source && d.OriginEventID == originEventID {
			return true, nil
		}
	}
	return false, nil
}

func (m *memIngester) docs() []storedDoc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.stored)
}

// noLookup hides MessageExists, like a core that cannot answer.
type noLookup struct{ module.Ingester }

type pollerBundle struct {
	dir string
	ing *memIngester
	p   *Poller
	cfg *PollerConfig
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func setupPoller(t *testing.T, mutate func(*PollerConfig)) *pollerBundle {
	t.Helper()
	cfg := NewPollerConfig()
	cfg.Directory = filepath.Join(t.TempDir(), "outbox")
	cfg.StableFor = 0
	cfg.Interval = delivery.Duration(5 * time.Millisecond)
	if mutate != nil {
		mutate(cfg)
	}
	b := &pollerBundle{dir: cfg.Directory, ing: newMemIngester(), cfg: cfg}
	b.p = b.newPoller(t, b.ing)
	return b
}

// newPoller builds another poller on the same directory, as a restarted process would.
func (b *pollerBundle) newPoller(t *testing.T, ing module.Ingester) *Poller {
	t.Helper()
	p, err := NewPoller(module.Env{Logger: testLogger(t), Ingest: ing}, "file_poller_test", b.cfg)
	if err != nil {
		t.Fatalf("NewPoller: %v", err)
	}
	if err := p.Prepare(); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return p
}

func (b *pollerBundle) write(t *testing.T, rel, content string) string {
	t.Helper()
	p := filepath.Join(b.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

func scan(t *testing.T, p *Poller) int {
	t.Helper()
	n, err := p.ScanOnce(context.Background())
	if err != nil {
		t.Fatalf("ScanOnce: %v", err)
	}
	return n
}

func assertExists(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("want %s to exist: %v", p, err)
	}
}

func assertGone(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want %s gone, got %v", p, err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// assertInflightEmpty checks the journal holds nothing.
func assertInflightEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, inflightDirName))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("inflight directory still holds %s", e.Name())
	}
}

func TestPollerTakesAStableFile(t *testing.T) {
	b := setupPoller(t, nil)
	src := b.write(t, "acme/invoice.edi", "UNA:+.? '")

	if n := scan(t, b.p); n != 0 {
		t.Fatalf("first scan stored %d, want 0: a file is seen twice before it is taken", n)
	}
	assertExists(t, src)
	if n := scan(t, b.p); n != 1 {
		t.Fatalf("second scan stored %d, want 1", n)
	}
	assertGone(t, src)
	assertInflightEmpty(t, b.dir)

	docs := b.ing.docs()
	if len(docs) != 1 {
		t.Fatalf("stored %d documents, want 1", len(docs))
	}
	d := docs[0]
	if d.Source != "file_poller_test" || d.From != "local" || d.To != "acme" || d.FileName != "invoice.edi" || string(d.Data) != "UNA:+.? '" {
		t.Errorf("stored %+v (%q)", d.Incoming, d.Data)
	}
	if !strings.HasPrefix(d.OriginEventID, originEventPrefix) {
		t.Errorf("origin event id %q, want the %s prefix", d.OriginEventID, originEventPrefix)
	}
}

func TestPollerPatternWithFromAndLiteral(t *testing.T) {
	b := setupPoller(t, func(c *PollerConfig) { c.Pattern = "out/{from}/{to}/{filename}" })
	src := b.write(t, "out/local/acme/a.xml", "<a/>")
	b.write(t, "elsewhere/local/acme/b.xml", "<b/>") // another literal: never scanned
	scan(t, b.p)
	scan(t, b.p)
	assertGone(t, src)
	assertExists(t, filepath.Join(b.dir, "elsewhere/local/acme/b.xml"))
	docs := b.ing.docs()
	if len(docs) != 1 || docs[0].From != "local" || docs[0].To != "acme" || docs[0].FileName != "a.xml" {
		t.Fatalf("stored %+v", docs)
	}
}

func TestPollerWaitsWhileAFileGrows(t *testing.T) {
	b := setupPoller(t, nil)
	src := b.write(t, "acme/big.dat", "part one;")
	scan(t, b.p)
	f, err := os.OpenFile(src, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("part two"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n := scan(t, b.p); n != 0 {
		t.Fatalf("a file that changed since the last scan was taken")
	}
	if n := scan(t, b.p); n != 1 {
		t.Fatalf("the unchanged file was not taken")
	}
	if got := string(b.ing.docs()[0].Data); got != "part one;part two" {
		t.Fatalf("stored %q", got)
	}
}

func TestPollerStableForUsesTheClock(t *testing.T) {
	b := setupPoller(t, func(c *PollerConfig) { c.StableFor = delivery.Duration(time.Minute) })
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b.p.now = func() time.Time { return now }
	b.write(t, "acme/x.txt", "x")
	scan(t, b.p)
	now = now.Add(59 * time.Second)
	if n := scan(t, b.p); n != 0 {
		t.Fatal("taken before stable_for passed")
	}
	now = now.Add(time.Second)
	if n := scan(t, b.p); n != 1 {
		t.Fatal("not taken once stable_for passed")
	}
}

func TestPollerIgnores(t *testing.T) {
	b := setupPoller(t, nil)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("do not take"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "acme"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "acme", "inner.txt"), []byte("do not take"), 0o640); err != nil {
		t.Fatal(err)
	}
	b.write(t, "acme/.hidden", "dot file")
	b.write(t, "acme/upload.tmp", "temp")
	b.write(t, "acme/upload.part", "temp")
	b.write(t, "acme/edit~", "temp")
	b.write(t, "acme/lonely.txt.meta.json", `{"correlation_id":"c"}`)
	b.write(t, "unroutable/acme/old.txt", "already aside")
	b.write(t, ".dotdir/x.txt", "dot dir")
	links := map[string]string{
		"acme/link.txt": secret,                         // symlinked file
		"linked":        filepath.Join(outside, "acme"), // symlinked party directory
		"acme/dirlink":  outside,                        // symlink at the file level
	}
	for rel, target := range links {
		if err := os.Symlink(target, filepath.Join(b.dir, rel)); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	for range 3 {
		scan(t, b.p)
	}
	if docs := b.ing.docs(); len(docs) != 0 {
		t.Fatalf("took %d files, want none: %+v", len(docs), docs[0].Incoming)
	}
	for rel := range links {
		assertExists(t, filepath.Join(b.dir, rel))
	}
	assertExists(t, secret)
	assertExists(t, filepath.Join(outside, "acme", "inner.txt"))
	for _, rel := range []string{"acme/.hidden", "acme/upload.tmp", "acme/upload.part", "acme/edit~", "acme/lonely.txt.meta.json", "unroutable/acme/old.txt", ".dotdir/x.txt"} {
		assertExists(t, filepath.Join(b.dir, rel))
	}
}

func TestPollerUnroutable(t *testing.T) {
	tests := []struct {
		name    string
		rel     string
		sidecar string // written beside the file when not empty
		reason  string // substring of the reason file
	}{
		{"unknown party", "nobody/a.txt", "", "unknown party"},
		{"invalid party name", "ACME/a.txt", "", "invalid party name"},
		{"above the pattern's depth", "stray.txt", "", "does not match the pattern"},
		{"sidecar with an unknown field", "acme/b.txt", `{"correlation_id":"c","colour":"red"}`, "unknown field"},
		{"sidecar that is not JSON", "acme/c.txt", `{"correlation_id":`, "sidecar"},
		{"sidecar with trailing data", "acme/d.txt", `{} {}`, "data after"},
		{"oversized sidecar", "acme/e.txt", `{"correlation_id":"` + strings.Repeat("x", maxSidecarSize) + `"}`, "larger than"},
		{"sidecar id with a control character", "acme/f.txt", `{"origin_event_id":"a\u0007b"}`, "control character"},
		{"sidecar id over 255 bytes", "acme/i.txt", `{"correlation_id":"` + strings.Repeat("x", 256) + `"}`, "correlation_id longer than 255 bytes"},
		{"sidecar id with an unprintable character", "acme/j.txt", `{"origin_event_id":"a\u200bb"}`, "origin_event_id contains the unprintable character U+200B"},
		{"sidecar metadata with a bad name", "acme/g.txt", `{"metadata":{"a b":"x"}}`, "invalid metadata name"},
		{"sidecar metadata value too long", "acme/h.txt", `{"metadata":{"order":"` + strings.Repeat("x", 257) + `"}}`, "metadata.order: longer than 256 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setupPoller(t, nil)
			b.ing.unknown["nobody"] = true
			src := b.write(t, tt.rel, "payload")
			if tt.sidecar != "" {
				b.write(t, tt.rel+sidecarSuffix, tt.sidecar)
			}
			scan(t, b.p)
			scan(t, b.p)
			assertGone(t, src)
			aside := filepath.Join(b.dir, "unroutable", filepath.FromSlash(tt.rel))
			if got := readFile(t, aside); got != "payload" {
				t.Fatalf("unroutable copy holds %q", got)
			}
			reason := readFile(t, aside+".reason.txt")
			if !strings.Contains(reason, tt.reason) {
				t.Errorf("reason %q, want it to mention %q", reason, tt.reason)
			}
			if tt.sidecar != "" {
				assertGone(t, src+sidecarSuffix)
				assertExists(t, aside+sidecarSuffix)
			}
			if docs := b.ing.docs(); len(docs) != 0 {
				t.Errorf("stored %d documents", len(docs))
			}
			assertInflightEmpty(t, b.dir)
		})
	}
}

func TestPollerUnroutableKeepsEarlierFiles(t *testing.T) {
	b := setupPoller(t, nil)
	b.ing.unknown["nobody"] = true
	for i := range 2 {
		b.write(t, "nobody/a.txt", fmt.Sprint("payload ", i))
		scan(t, b.p)
		scan(t, b.p)
	}
	entries, err := os.ReadDir(filepath.Join(b.dir, "unroutable", "nobody"))
	if err != nil {
		t.Fatal(err)
	}
	var data, reasons int
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".reason.txt") {
			reasons++
		} else {
			data++
		}
	}
	if data != 2 || reasons != 2 {
		t.Fatalf("unroutable holds %d files and %d reasons, want 2 and 2", data, reasons)
	}
}

func TestPollerSidecarIDs(t *testing.T) {
	b := setupPoller(t, nil)
	src := b.write(t, "acme/order.xml", "<order/>")
	b.write(t, "acme/order.xml"+sidecarSuffix, `{"correlation_id":"PO-4711","origin_event_id":"erp-9f1c","metadata":{"Order-ID":"77"}}`)
	scan(t, b.p)
	scan(t, b.p)
	docs := b.ing.docs()
	if len(docs) != 1 {
		t.Fatalf("stored %d documents", len(docs))
	}
	if docs[0].CorrelationID != "PO-4711" || docs[0].OriginEventID != "erp-9f1c" {
		t.Errorf("ids %q / %q", docs[0].CorrelationID, docs[0].OriginEventID)
	}
	if len(docs[0].Metadata) != 1 || docs[0].Metadata["order-id"] != "77" {
		t.Errorf("metadata %v", docs[0].Metadata)
	}
	assertGone(t, src)
	assertGone(t, src+sidecarSuffix)
	assertInflightEmpty(t, b.dir)
}

func TestPollerBatchFailureLeavesFilesInPlace(t *testing.T) {
	b := setupPoller(t, nil)
	src := b.write(t, "acme/a.txt", "A")
	side := b.write(t, "acme/a.txt"+sidecarSuffix, `{"correlation_id":"c-1"}`)
	b.ing.fail = errors.New("database is down")

	scan(t, b.p)
	if _, err := b.p.ScanOnce(context.Background()); err == nil {
		t.Fatal("a failed batch was not reported")
	}
	assertExists(t, src)
	assertExists(t, side)
	assertInflightEmpty(t, b.dir)

	b.ing.fail = nil
	scan(t, b.p) // seen again
	if n := scan(t, b.p); n != 1 {
		t.Fatalf("stored %d after recovery, want 1", n)
	}
	assertGone(t, src)
	assertGone(t, side)
	if docs := b.ing.docs(); len(docs) != 1 || docs[0].CorrelationID != "c-1" {
		t.Fatalf("stored %+v", docs)
	}
}

func TestPollerAmbiguousFailureIsLookedUp(t *testing.T) {
	b := setupPoller(t, nil)
	src := b.write(t, "acme/a.txt", "A")
	b.ing.commitThenFail = errors.New("connection lost during commit")
	scan(t, b.p)
	if _, err := b.p.ScanOnce(context.Background()); err == nil {
		t.Fatal("a failed batch was not reported")
	}
	b.ing.commitThenFail = nil
	assertGone(t, src) // stored after all: cleaned up, not put back
	for range 3 {
		scan(t, b.p)
	}
	if docs := b.ing.docs(); len(docs) != 1 {
		t.Fatalf("stored %d documents, want exactly 1", len(docs))
	}
	assertInflightEmpty(t, b.dir)
}

func TestPollerLookupFailureKeepsTheJournal(t *testing.T) {
	b := setupPoller(t, nil)
	src := b.write(t, "acme/a.txt", "A")
	b.ing.commitThenFail = errors.New("connection lost during commit")
	b.ing.lookupErr = errors.New("database is down")
	scan(t, b.p)
	if _, err := b.p.ScanOnce(context.Background()); err == nil {
		t.Fatal("a failed batch was not reported")
	}
	b.ing.commitThenFail = nil
	assertGone(t, src)
	other := b.write(t, "acme/b.txt", "B")
	for range 2 {
		if _, err := b.p.ScanOnce(context.Background()); err == nil {
			t.Fatal("an unresolved journal was not reported")
		}
	}
	assertExists(t, other) // nothing new is taken while the journal is unresolved
	b.ing.lookupErr = nil
	scan(t, b.p)
	scan(t, b.p)
	assertGone(t, other)
	if docs := b.ing.docs(); len(docs) != 2 {
		t.Fatalf("stored %d documents, want 2", len(docs))
	}
	assertInflightEmpty(t, b.dir)
}

// crashDuring runs a scan whose ingest panics, as if the process died there.
func crashDuring(t *testing.T, b *pollerBundle, when string) {
	t.Helper()
	b.ing.crash = when
	defer func() {
		b.ing.crash = ""
		if r := recover(); r == nil {
			t.Fatal("the scan did not reach the ingester")
		} else if _, ok := r.(crashed); !ok {
			panic(r)
		}
	}()
	scan(t, b.p)
}

func TestPollerReconcilesAfterACrash(t *testing.T) {
	tests := []struct {
		name     string
		when     string
		lookup   bool
		wantDocs int
	}{
		{"crash after the commit", "after", true, 1},
		{"crash before the commit", "before", true, 1},
		{"crash before the commit, no lookup", "before", false, 1},
		{"crash after the commit, no lookup", "after", false, 2}, // nothing lost; a duplicate is the price
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setupPoller(t, func(c *PollerConfig) { c.ProcessedDirectory = filepath.Join(filepath.Dir(c.Directory), "processed") })
			src := b.write(t, "acme/a.txt", "A")
			b.write(t, "acme/a.txt"+sidecarSuffix, `{"correlation_id":"c-1"}`)
			scan(t, b.p)
			crashDuring(t, b, tt.when)
			assertGone(t, src) // claimed into the journal

			var ing module.Ingester = b.ing
			if !tt.lookup {
				ing = noLookup{b.ing}
			}
			restarted := b.newPoller(t, ing)
			scan(t, restarted)
			scan(t, restarted)

			docs := b.ing.docs()
			if len(docs) != tt.wantDocs {
				t.Fatalf("stored %d documents, want %d", len(docs), tt.wantDocs)
			}
			for _, d := range docs {
				if d.CorrelationID != "c-1" || string(d.Data) != "A" {
					t.Errorf("stored %+v %q", d.Incoming, d.Data)
				}
			}
			assertInflightEmpty(t, b.dir)
			processed := filepath.Join(b.cfg.ProcessedDirectory, "acme", "a.txt")
			if got := readFile(t, processed); got != "A" {
				t.Errorf("processed copy holds %q", got)
			}
			assertExists(t, processed+sidecarSuffix)
			assertGone(t, src)
		})
	}
}

func TestPollerReconcilesAMixedJournal(t *testing.T) {
	b := setupPoller(t, nil)
	for _, n := range []string{"a", "b", "c"} {
		b.write(t, "acme/"+n+".txt", strings.ToUpper(n))
	}
	// Claim all three as a batch would, then store only b, as if a crash hit between two
	// batches of a different split.
	found, err := b.p.walkAll()
	if err != nil {
		t.Fatal(err)
	}
	var items []*item
	for _, c := range found {
		it, reason := b.p.prepare(c)
		if reason != "" {
			t.Fatal(reason)
		}
		items = append(items, it)
	}
	claimed, err := b.p.claim(items)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	var stored *item
	for _, it := range claimed {
		if it.Path == "acme/b.txt" {
			stored = it
		}
	}
	f, err := os.Open(b.p.inflightPath(stored.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ing.Ingest(context.Background(), []module.Incoming{{Source: "file_poller_test", From: "local", To: "acme", FileName: "b.txt", Body: f, OriginEventID: stored.OriginEventID}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// An inflight file no journal names is put aside, not lost.
	if err := os.WriteFile(filepath.Join(b.dir, inflightDirName, "stray"), []byte("?"), 0o600); err != nil {
		t.Fatal(err)
	}

	restarted := b.newPoller(t, b.ing)
	if n := scan(t, restarted); n != 2 {
		t.Fatalf("reconciliation stored %d, want the 2 not yet stored", n)
	}
	count := map[string]int{}
	for _, d := range b.ing.docs() {
		count[string(d.FileName)]++
	}
	if count["a.txt"] != 1 || count["b.txt"] != 1 || count["c.txt"] != 1 {
		t.Fatalf("stored %v, want each file exactly once", count)
	}
	assertInflightEmpty(t, b.dir)
	assertExists(t, filepath.Join(b.dir, "unroutable", inflightDirName, "stray"))
}

func TestPollerProcessedDirectory(t *testing.T) {
	b := setupPoller(t, func(c *PollerConfig) { c.ProcessedDirectory = filepath.Join(filepath.Dir(c.Directory), "done") })
	for i := range 2 {
		b.write(t, "acme/a.txt", fmt.Sprint("v", i))
		b.write(t, "acme/a.txt"+sidecarSuffix, `{}`)
		scan(t, b.p)
		if n := scan(t, b.p); n != 1 {
			t.Fatalf("round %d stored %d", i, n)
		}
	}
	done := filepath.Join(b.cfg.ProcessedDirectory, "acme")
	if got := readFile(t, filepath.Join(done, "a.txt")); got != "v0" {
		t.Errorf("first processed file holds %q", got)
	}
	entries, err := os.ReadDir(done)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Errorf("processed directory holds %d entries, want 2 files and 2 sidecars", len(entries))
	}
	assertGone(t, filepath.Join(b.dir, "acme", "a.txt"))
}

func TestPollerBatches(t *testing.T) {
	calls := 0
	b := setupPoller(t, func(c *PollerConfig) { c.BatchSize = 2 })
	counting := ingestFunc(func(ctx context.Context, items []module.Incoming) ([]module.IngestResult, error) {
		calls++
		if len(items) > 2 {
			t.Errorf("a batch of %d items, want at most 2", len(items))
		}
		return b.ing.Ingest(ctx, items)
	})
	p := b.newPoller(t, counting)
	for i := range 5 {
		b.write(t, fmt.Sprintf("acme/%d.txt", i), "x")
	}
	scan(t, p)
	if n := scan(t, p); n != 5 || calls != 3 {
		t.Fatalf("stored %d in %d calls, want 5 in 3", n, calls)
	}
}

type ingestFunc func(ctx context.Context, items []module.Incoming) ([]module.IngestResult, error)

func (f ingestFunc) Ingest(ctx context.Context, items []module.Incoming) ([]module.IngestResult, error) {
	return f(ctx, items)
}

func TestPollerStartAndStop(t *testing.T) {
	b := setupPoller(t, nil)
	if err := b.p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	src := b.write(t, "acme/a.txt", "A")
	waitFor(t, func() bool { return len(b.ing.docs()) == 1 })
	assertGone(t, src)
	if err := b.p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-b.p.done:
	default:
		t.Fatal("the scan loop is still running after Stop")
	}
}

func TestPollerStopWaitsForTheBatchInFlight(t *testing.T) {
	b := setupPoller(t, nil)
	b.ing.entered = make(chan struct{}, 1)
	b.ing.block = make(chan struct{})
	src := b.write(t, "acme/a.txt", "A")
	if err := b.p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-b.ing.entered
	stopped := make(chan error, 1)
	go func() { stopped <- b.p.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a batch was in flight", err)
	default:
	}
	close(b.ing.block)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if len(b.ing.docs()) != 1 {
		t.Fatal("the batch in flight was not finished")
	}
	assertGone(t, src)
	assertInflightEmpty(t, b.dir)
}

func TestPollerStopGivesUpWhenItsContextEnds(t *testing.T) {
	b := setupPoller(t, nil)
	b.ing.entered = make(chan struct{}, 1)
	b.ing.block = make(chan struct{})
	b.write(t, "acme/a.txt", "A")
	if err := b.p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-b.ing.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.p.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop: %v, want context.Canceled", err)
	}
	close(b.ing.block)
	<-b.p.done
}

func TestPollerStartRefusesAFileAsDirectory(t *testing.T) {
	cfg := NewPollerConfig()
	cfg.Directory = filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(cfg.Directory, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	p, err := NewPoller(module.Env{Ingest: newMemIngester()}, "p", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err == nil || !strings.Contains(err.Error(), cfg.Directory) {
		t.Fatalf("Start: %v, want an error naming the directory", err)
	}
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatal("condition not met before the deadline")
		case <-tick.C:
		}
	}
}

// A claimed file is offered to the payload store to link (storage.FileBody) only when
// the poller deletes it after storing; a file kept in a processed directory, where
// others may change it, is offered as a plain reader, to be copied.
func TestPollerOffersFilesToLink(t *testing.T) {
	for _, c := range []struct {
		name      string
		processed string
		want      bool
	}{
		{"deleted after storing", "", true},
		{"kept in a processed directory", "done", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := setupPoller(t, func(cfg *PollerConfig) {
				if c.processed != "" {
					cfg.ProcessedDirectory = filepath.Join(filepath.Dir(cfg.Directory), c.processed)
				}
			})
			var offered []bool
			p := b.newPoller(t, ingestFunc(func(ctx context.Context, items []module.Incoming) ([]module.IngestResult, error) {
				for _, it := range items {
					fb, ok := it.Body.(storage.FileBody)
					offered = append(offered, ok)
					if ok {
						f, err := fb.OpenFile()
						if err != nil {
							t.Fatalf("OpenFile: %v", err)
						}
						data, err := io.ReadAll(f)
						f.Close()
						if err != nil || string(data) != "doc" {
							t.Fatalf("OpenFile reads %q, %v; want the claimed file", data, err)
						}
					}
				}
				return b.ing.Ingest(ctx, items)
			}))
			b.write(t, "acme/a.txt", "doc")
			scan(t, p)
			if n := scan(t, p); n != 1 {
				t.Fatalf("stored %d files, want 1", n)
			}
			if len(offered) != 1 || offered[0] != c.want {
				t.Errorf("offered to link: %v, want [%v]", offered, c.want)
			}
		})
	}
}
