package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"wharf/internal/alert"
	"wharf/internal/durable"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// inflightDirName is the journal directory under the poller's directory.
const inflightDirName = ".wharf-inflight"

// Poller is a running file-poller instance.
type Poller struct {
	name      persistence.InstanceName
	pattern   pathPattern
	from, to  persistence.PartyName // fixed parties when the pattern has no placeholder
	interval  time.Duration
	stableFor time.Duration
	batchSize int

	dir           string
	inflightDir   string
	unroutableDir string
	alerts        alert.Raiser
	processedDir  string // empty: delete taken files

	ingest module.Ingester
	lookup Lookup // nil when the ingester cannot answer
	log    *slog.Logger
	now    func() time.Time

	// scanMu serializes scans; the fields below it belong to the scan.
	scanMu sync.Mutex
	seen   map[string]observation
	// known remembers, for inflight items this process handled, whether the core stored
	// them, so a clean-up that failed is retried without asking or ingesting again.
	known        map[string]bool
	warnedLookup bool

	lifeMu   sync.Mutex
	started  bool
	quit     chan struct{}
	done     chan struct{}
	cancel   context.CancelFunc
	stopOnce sync.Once
}

// NewPoller builds a poller from a validated config.
func NewPoller(env module.Env, name persistence.InstanceName, cfg *PollerConfig) (*Poller, error) {
	if env.Ingest == nil {
		return nil, fmt.Errorf("file-poller %s: no ingester", name)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("file-poller %s: %w", name, err)
	}
	pat, _ := parsePathPattern(cfg.Pattern)
	logger := env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Clean(cfg.Directory)
	p := &Poller{
		name:          name,
		pattern:       pat,
		interval:      time.Duration(cfg.Interval),
		stableFor:     time.Duration(cfg.StableFor),
		batchSize:     cfg.BatchSize,
		dir:           dir,
		inflightDir:   filepath.Join(dir, inflightDirName),
		unroutableDir: cfg.unroutableDir(),
		ingest:        env.Ingest,
		alerts:        env.Raiser(),
		log:           logger.With("instance", string(name), "plugin", string(persistence.PluginFilePoller)),
		now:           time.Now,
		seen:          map[string]observation{},
		known:         map[string]bool{},
	}
	if cfg.ProcessedDirectory != "" {
		p.processedDir = filepath.Clean(cfg.ProcessedDirectory)
	}
	if !pat.has(segFrom) {
		p.from = persistence.PartyName(cfg.Organization)
	}
	if !pat.has(segTo) {
		p.to = persistence.PartyName(cfg.Partner)
	}
	if l, ok := env.Ingest.(Lookup); ok {
		p.lookup = l
	}
	return p, nil
}

// Prepare makes the directory and the journal directory; Start calls it.
func (p *Poller) Prepare() error {
	if err := os.MkdirAll(p.dir, 0o750); err != nil {
		return fmt.Errorf("file-poller %s: directory %s: %s", p.name, p.dir, errText(err))
	}
	info, err := os.Stat(p.dir)
	if err != nil {
		return fmt.Errorf("file-poller %s: directory %s: %s", p.name, p.dir, errText(err))
	}
	if !info.IsDir() {
		return fmt.Errorf("file-poller %s: %s is not a directory", p.name, p.dir)
	}
	if err := os.Mkdir(p.inflightDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("file-poller %s: directory %s: %s", p.name, p.inflightDir, errText(err))
	}
	if info, err := os.Lstat(p.inflightDir); err != nil || !info.IsDir() {
		return fmt.Errorf("file-poller %s: %s is not a directory", p.name, p.inflightDir)
	}
	return nil
}

// Start prepares the directories and starts scanning every interval; the first scan,
// which also finishes what an earlier run left in the journal, runs at once.
func (p *Poller) Start(ctx context.Context) error {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.started {
		return fmt.Errorf("file-poller %s: already started", p.name)
	}
	if err := p.Prepare(); err != nil {
		return err
	}
	if p.lookup == nil {
		p.log.Warn("the ingester cannot look messages up: files interrupted by a crash are ingested again")
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.started = true
	p.quit = make(chan struct{})
	p.done = make(chan struct{})
	p.cancel = cancel
	go p.run(runCtx)
	return nil
}

func (p *Poller) run(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		if n, err := p.ScanOnce(ctx); err != nil {
			if ctx.Err() == nil {
				p.log.Error("scan failed", "error", err)
			}
		} else if n > 0 {
			p.log.Debug("scan stored files", "count", n)
		}
		select {
		case <-p.quit:
			return
		case <-t.C:
		}
	}
}

// Stop ends scanning. It lets the batch in flight finish; when ctx ends first, the batch
// is interrupted (its files stay journaled and the next start finishes them).
func (p *Poller) Stop(ctx context.Context) error {
	p.lifeMu.Lock()
	started := p.started
	p.lifeMu.Unlock()
	if !started {
		return nil
	}
	p.stopOnce.Do(func() { close(p.quit) })
	select {
	case <-p.done:
		p.cancel()
		return nil
	case <-ctx.Done():
		p.cancel()
		return ctx.Err()
	}
}

func (p *Poller) stopping() bool {
	if p.quit == nil {
		return false
	}
	select {
	case <-p.quit:
		return true
	default:
		return false
	}
}

// observation is what a scan saw of a file, to tell when it stopped changing.
type observation struct {
	fp    fingerprint
	since time.Time
}

type fingerprint struct {
	size       int64
	mod        time.Time
	sideExists bool
	sideSize   int64
	sideMod    time.Time
}

// candidate is a regular file found by the walk.
type candidate struct {
	rel      string   // slash-separated path under the directory
	dirs     []string // directory names on the way, one per pattern segment before the last
	name     string
	mismatch bool // found above the depth of the pattern
	sidecar  bool
	fp       fingerprint
}

func (c candidate) abs(base string) string { return filepath.Join(base, filepath.FromSlash(c.rel)) }

// ScanOnce reconciles the journal, then takes every stable file, in batches; it returns
// how many documents the core stored. Scans never overlap.
func (p *Poller) ScanOnce(ctx context.Context) (int, error) {
	p.scanMu.Lock()
	defer p.scanMu.Unlock()

	if err := p.Prepare(); err != nil {
		return 0, err
	}
	stored, err := p.reconcile(ctx)
	if err != nil {
		return stored, err
	}
	found, err := p.walkAll()
	if err != nil {
		return stored, err
	}
	stable := p.observe(found)

	var ready []*item
	for _, c := range stable {
		it, reason := p.prepare(c)
		if reason != "" {
			p.moveUnroutable(c, reason)
			delete(p.seen, c.rel)
			continue
		}
		ready = append(ready, it)
	}
	for len(ready) > 0 {
		if p.stopping() || ctx.Err() != nil {
			break
		}
		n := min(len(ready), p.batchSize)
		batch := ready[:n]
		ready = ready[n:]
		for _, it := range batch {
			delete(p.seen, it.Path)
		}
		got, err := p.takeBatch(ctx, batch)
		stored += got
		if err != nil {
			return stored, err
		}
	}
	return stored, nil
}

// walkAll lists the regular files the pattern reaches.
func (p *Poller) walkAll() ([]candidate, error) {
	var out []candidate
	if err := p.walk(p.dir, "", nil, &out); err != nil {
		return nil, fmt.Errorf("scan %s: %s", p.dir, errText(err))
	}
	return out, nil
}

func (p *Poller) walk(dir, rel string, dirs []string, out *[]candidate) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	level := len(dirs)
	seg := p.pattern[level]
	last := level == len(p.pattern)-1
	regular := make(map[string]fs.DirEntry, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			regular[e.Name()] = e
		}
	}
	for _, e := range entries {
		name := e.Name()
		if ignoredName(name) {
			continue
		}
		childAbs := filepath.Join(dir, name)
		childRel := path.Join(rel, name)
		switch t := e.Type(); {
		case t&fs.ModeSymlink != 0:
			continue
		case t.IsDir():
			if last || p.reservedDir(childAbs) || (seg.kind == segLiteral && name != seg.text) {
				continue
			}
			if err := p.walk(childAbs, childRel, append(dirs[:level:level], name), out); err != nil {
				p.log.Warn("cannot scan a directory", "path", childRel, "error", errText(err))
			}
		case t.IsRegular():
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			c := candidate{
				rel:      childRel,
				dirs:     dirs,
				name:     name,
				mismatch: !last,
				fp:       fingerprint{size: info.Size(), mod: info.ModTime()},
			}
			if se, ok := regular[name+sidecarSuffix]; ok && !c.mismatch {
				if si, err := se.Info(); err == nil && si.Mode().IsRegular() {
					c.sidecar = true
					c.fp.sideExists, c.fp.sideSize, c.fp.sideMod = true, si.Size(), si.ModTime()
				}
			}
			*out = append(*out, c)
		}
	}
	return nil
}

// reservedDir reports the poller's own directories, which the walk never enters.
func (p *Poller) reservedDir(abs string) bool {
	return abs == p.unroutableDir || abs == p.processedDir || abs == p.inflightDir
}

// Suffixes of names that writers use while a file is still being written.
var tempSuffixes = []string{".tmp", ".temp", ".part", ".partial", ".filepart", ".crdownload", ".download", ".swp", "~"}

// ignoredName reports names the poller never takes: dot files, writers' temporary files
// and sidecars (taken with their document).
func ignoredName(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, sidecarSuffix) {
		return true
	}
	lower := strings.ToLower(name)
	for _, s := range tempSuffixes {
		if strings.HasSuffix(lower, s) {
			return true
		}
	}
	return false
}

// observe records what the walk saw and returns the files that have not changed since an
// earlier scan for at least stableFor.
func (p *Poller) observe(found []candidate) []candidate {
	now := p.now()
	next := make(map[string]observation, len(found))
	var stable []candidate
	for _, c := range found {
		o, ok := p.seen[c.rel]
		if !ok || o.fp != c.fp {
			next[c.rel] = observation{fp: c.fp, since: now}
			continue
		}
		next[c.rel] = o
		if now.Sub(o.since) >= p.stableFor {
			stable = append(stable, c)
		}
	}
	p.seen = next
	return stable
}

// prepare turns a stable file into an item to ingest, or says why it is unroutable.
func (p *Poller) prepare(c candidate) (*item, string) {
	if c.mismatch {
		return nil, fmt.Sprintf("the path does not match the pattern (%d segments expected)", len(p.pattern))
	}
	it := &item{Path: c.rel, From: string(p.from), To: string(p.to)}
	for i, seg := range p.pattern[:len(p.pattern)-1] {
		v := c.dirs[i]
		switch seg.kind {
		case segTo, segFrom:
			party, err := persistence.ParsePartyName(v)
			if err != nil {
				return nil, err.Error()
			}
			if seg.kind == segTo {
				it.To = string(party)
			} else {
				it.From = string(party)
			}
		}
	}
	fn, err := persistence.ParseFileName(c.name)
	if err != nil {
		return nil, err.Error()
	}
	it.FileName = string(fn)
	if c.sidecar {
		sc, err := readSidecar(c.abs(p.dir) + sidecarSuffix)
		if err != nil {
			return nil, err.Error()
		}
		it.CorrelationID = sc.CorrelationID
		it.Metadata = sc.Metadata
		it.OriginEventID = sc.OriginEventID
		it.Sidecar = true
	}
	return it, ""
}

// moveUnroutable moves a file that was never claimed (and its sidecar) aside.
func (p *Poller) moveUnroutable(c candidate, reason string) {
	src := c.abs(p.dir)
	var side string
	if c.sidecar {
		side = src + sidecarSuffix
	}
	p.putAside(src, side, c.rel, reason)
}

// putAside moves a document and its sidecar to the unroutable directory under rel and
// writes the reason beside them.
func (p *Poller) putAside(src, side, rel, reason string) bool {
	dst, err := freeName(filepath.Join(p.unroutableDir, filepath.FromSlash(rel)))
	if err == nil {
		err = os.MkdirAll(filepath.Dir(dst), 0o750)
	}
	if err == nil {
		err = writeFileSync(dst+".reason.txt", []byte(reason+"\n"), 0o640)
	}
	if err == nil && side != "" {
		if err = moveFile(side, dst+sidecarSuffix); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	if err == nil {
		err = moveFile(src, dst)
	}
	if err == nil {
		err = durable.SyncDir(filepath.Dir(dst))
	}
	if err != nil {
		p.log.Error("cannot move an unroutable file aside", "path", rel, "reason", reason, "error", errText(err))
		return false
	}
	p.log.Warn("file unroutable", "code", "file_unroutable", "path", rel, "reason", reason)
	p.alerts.Raise(alert.Alert{
		Code:    alert.FileUnroutable,
		Subject: alert.Subject{Kind: "file", ID: rel, Name: path.Base(rel)},
		Summary: fmt.Sprintf("File %s in %s was put aside: %s", rel, p.name, reason),
		Details: []alert.Detail{{Label: "Source", Value: string(p.name)}, {Label: "Path", Value: rel}, {Label: "Reason", Value: reason}},
		Link:    "/ui/services",
	})
	return true
}
