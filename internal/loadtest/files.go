package loadtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL driver for the throwaway schema
)

// FilesOptions describes a file-to-file run.
type FilesOptions struct {
	N       int
	SizeKiB int
	Bin     string // the wharf binary
	Dir     string // a throwaway directory
	// DBURL runs against PostgreSQL: the run gets a schema of its own there, dropped after.
	DBURL string
	// KillAfter, when above zero, kills the process with SIGKILL once that many files
	// were delivered, and starts it again on the same data; Kills (default 1) repeats
	// that every KillAfter more files.
	KillAfter int
	Kills     int
	// Rate, when above zero, paces the drops at that many files per second, so latency
	// is measured below saturation; zero drops as fast as the disk takes them.
	Rate float64
	// Sessions, when above zero, spreads the files round-robin over that many partners
	// (a folder each), so over as many default sessions; Ordered makes the route ordered
	// and checks at the end that each session's files were written in the order dropped.
	Sessions int
	Ordered  bool
	Timeout  time.Duration
	Progress io.Writer
}

// FilesResult is what a run measured.
type FilesResult struct {
	N          int
	Elapsed    time.Duration
	PerSecond  float64
	P50        time.Duration
	P95        time.Duration
	P99        time.Duration
	CPUSeconds float64
	PeakRSSMiB float64
	Crashes    []Crash
	Database   string
}

type doc struct {
	seq     int
	session string // the partner the file is addressed to
	name    string
	sum     [32]byte
	dropped time.Time
	seen    time.Time
}

// RunFiles drops N files into the outbox of a fresh standalone instance, waits until each
// is delivered to the inbox, checks every one byte for byte and that exactly N messages
// exist, all delivered, and reports throughput, latency, CPU and memory.
func RunFiles(ctx context.Context, opt FilesOptions) (FilesResult, error) {
	res := FilesResult{N: opt.N, Database: "sqlite"}
	if opt.N <= 0 || opt.SizeKiB < 0 {
		return res, errors.New("loadtest: -n must be positive and -size-kib not negative")
	}
	if err := checkSessions(opt); err != nil {
		return res, err
	}
	if opt.Timeout == 0 {
		opt.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	progress := opt.Progress
	if progress == nil {
		progress = io.Discard
	}
	crashes, err := newCrashPlan(opt.KillAfter, opt.Kills, "wharf", progress)
	if err != nil {
		return res, err
	}
	dbURL := opt.DBURL
	if dbURL != "" {
		res.Database = "postgres"
		u, drop, err := privateSchema(ctx, dbURL)
		if err != nil {
			return res, err
		}
		defer drop()
		dbURL = u
	}
	dataDir := filepath.Join(opt.Dir, "data")
	in, err := NewInstance(opt.Bin, dataDir, dbURL)
	if err != nil {
		return res, err
	}
	if err := in.CreateToken(ctx, "loadtest"); err != nil {
		return res, err
	}
	if err := in.Start(ctx); err != nil {
		return res, err
	}
	defer in.Kill()
	if err := prepare(ctx, in, opt); err != nil {
		return res, fmt.Errorf("prepare the instance: %w: %s", err, in.Logs())
	}

	docs := make([]*doc, opt.N)
	outbox := filepath.Join(dataDir, "outbox")
	inbox := filepath.Join(dataDir, "inbox", "local")
	for _, p := range partners(opt) {
		if err := os.MkdirAll(filepath.Join(outbox, p), 0o750); err != nil {
			return res, err
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	payload := make([]byte, opt.SizeKiB*1024)

	var cpu time.Duration
	var peak int64
	account := func(st *os.ProcessState) {
		used, p := usage(st)
		cpu, peak = cpu+used, max(peak, p)
	}

	var mu sync.Mutex
	dropDone := make(chan error, 1)
	start := time.Now()
	go func() {
		var pace *time.Ticker
		if opt.Rate > 0 {
			pace = time.NewTicker(time.Duration(float64(time.Second) / opt.Rate))
			defer pace.Stop()
		}
		for i := range docs {
			if pace != nil {
				<-pace.C
			}
			for j := range payload {
				payload[j] = byte(rnd.IntN(256))
			}
			d := &doc{seq: i, session: partnerOf(opt, i), name: fmt.Sprintf("doc-%06d.edi", i), sum: sha256.Sum256(payload)}
			tmp := filepath.Join(outbox, d.session, "."+d.name+".part")
			if err := os.WriteFile(tmp, payload, 0o640); err != nil {
				dropDone <- err
				return
			}
			mu.Lock()
			d.dropped = time.Now()
			docs[i] = d
			mu.Unlock()
			if err := os.Rename(tmp, filepath.Join(outbox, d.session, d.name)); err != nil {
				dropDone <- err
				return
			}
		}
		dropDone <- nil
	}()

	byName := map[string]*doc{}
	known := 0 // docs[:known] are in byName
	seen := 0
	dropped := false
	// The inbox is listed every 20 ms: fine enough for latency figures, cheap enough not
	// to take CPU from the gateway under test on a small machine.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for seen < opt.N {
		select {
		case err := <-dropDone:
			if err != nil {
				return res, fmt.Errorf("drop files: %w", err)
			}
			dropped = true
		case <-ctx.Done():
			return res, fmt.Errorf("only %d of %d files arrived before the time-out: %s", seen, opt.N, in.Logs())
		case <-tick.C:
		}
		entries, err := os.ReadDir(inbox)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, err
		}
		now := time.Now()
		mu.Lock()
		for ; known < len(docs) && docs[known] != nil; known++ {
			byName[docs[known].name] = docs[known]
		}
		mu.Unlock()
		for _, e := range entries {
			d := byName[e.Name()]
			if d == nil || !d.seen.IsZero() {
				continue
			}
			d.seen = now
			seen++
			if crashes.recovering() {
				info, err := e.Info()
				if err != nil {
					return res, fmt.Errorf("inbox: %w", err)
				}
				crashes.arrived(info.ModTime())
			}
		}
		if crashes.due(seen) {
			if err := crashes.crash(ctx, in, seen, account); err != nil {
				return res, err
			}
		}
	}
	if !dropped {
		if err := <-dropDone; err != nil {
			return res, err
		}
	}
	end := time.Now()
	if res.Crashes, err = crashes.done(); err != nil {
		return res, err
	}
	for i := range res.Crashes {
		for _, d := range docs {
			res.Crashes[i].catchUp(d.dropped, d.seen)
		}
	}

	if err := verifyInbox(inbox, docs); err != nil {
		return res, err
	}
	if opt.Ordered {
		if err := checkInboxOrder(inbox, docs); err != nil {
			return res, err
		}
	}
	if err := waitAllDelivered(ctx, in, opt.N); err != nil {
		return res, err
	}
	st, err := in.Stop(2 * time.Minute)
	account(st)
	if err != nil {
		return res, err
	}

	lat := make([]time.Duration, len(docs))
	for i, d := range docs {
		lat[i] = d.seen.Sub(d.dropped)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	res.Elapsed = end.Sub(start)
	res.PerSecond = float64(opt.N) / res.Elapsed.Seconds()
	res.P50, res.P95, res.P99 = pct(0.50), pct(0.95), pct(0.99)
	res.CPUSeconds = cpu.Seconds()
	res.PeakRSSMiB = float64(peak) / (1 << 20)
	return res, nil
}

// prepare creates the partners and the route of the scenario and makes the poller take
// files as soon as they appear (the load test renames complete files into place).
func prepare(ctx context.Context, in *Instance, opt FilesOptions) error {
	for _, p := range partners(opt) {
		if err := in.API(ctx, "POST", "/api/v1/partners", map[string]any{"name": p}, nil); err != nil {
			return err
		}
	}
	// The folder pickup's default routes (to the AS2 sender) would give each file a
	// second delivery; the scenario measures the folders alone.
	var routes struct {
		Routes []struct {
			ID     int64  `json:"id"`
			Source string `json:"source"`
		} `json:"routes"`
	}
	if err := in.API(ctx, "GET", "/api/v1/routes", nil, &routes); err != nil {
		return err
	}
	for _, r := range routes.Routes {
		if r.Source != "file_poller_default" {
			continue
		}
		if err := in.API(ctx, "DELETE", fmt.Sprintf("/api/v1/routes/%d", r.ID), nil, nil); err != nil {
			return err
		}
	}
	route := map[string]any{"source": "file_poller_default", "from": "*", "to": "acme", "target": "file_writer_default", "ordered": opt.Ordered}
	if opt.Sessions > 0 {
		route["to"] = "*"
	}
	if err := in.API(ctx, "POST", "/api/v1/routes", route, nil); err != nil {
		return err
	}
	if err := in.shortLeases(ctx); err != nil {
		return err
	}
	return in.pollFast(ctx)
}

func verifyInbox(inbox string, docs []*doc) error {
	entries, err := os.ReadDir(inbox)
	if err != nil {
		return err
	}
	want := make(map[string]bool, len(docs))
	for _, d := range docs {
		want[d.name] = true
	}
	var extra []string
	delivered := 0
	for _, e := range entries {
		switch {
		case want[e.Name()]:
			delivered++
		case strings.HasPrefix(e.Name(), "."):
			// A writer's temporary file left by the kill: never a delivered document,
			// and readers of the inbox skip dot files.
		default:
			extra = append(extra, e.Name())
		}
	}
	if len(extra) > 0 || delivered != len(docs) {
		return fmt.Errorf("inbox holds %d of %d documents and %d unexpected files %v", delivered, len(docs), len(extra), extra)
	}
	for _, d := range docs {
		b, err := os.ReadFile(filepath.Join(inbox, d.name))
		if err != nil {
			return err
		}
		if sha256.Sum256(b) != d.sum {
			return fmt.Errorf("%s arrived with different bytes", d.name)
		}
	}
	return nil
}

type listAnswer struct {
	Total int `json:"total"`
}

// waitAllDelivered polls the API until n messages exist and all are delivered.
func waitAllDelivered(ctx context.Context, in *Instance, n int) error {
	for {
		var all, delivered listAnswer
		if err := in.API(ctx, "GET", "/api/v1/messages?limit=1", nil, &all); err != nil {
			return err
		}
		if err := in.API(ctx, "GET", "/api/v1/messages?limit=1&status=delivered", nil, &delivered); err != nil {
			return err
		}
		if all.Total > n {
			return fmt.Errorf("%d messages exist for %d files: a file was taken twice", all.Total, n)
		}
		if all.Total == n && delivered.Total == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d messages delivered (%d exist) before the time-out", delivered.Total, n, all.Total)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// privateSchema creates a schema of its own for one run and returns a URL that uses it.
func privateSchema(ctx context.Context, dbURL string) (string, func(), error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return "", nil, err
	}
	schema := fmt.Sprintf("wharf_loadtest_%d", time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("create schema for the run: %w", err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		db.Close()
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	drop := func() {
		_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
		db.Close()
	}
	return u.String(), drop, nil
}
