package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"wharf/internal/bus"
)

// PosterOptions describes an http-poster run: one `wharf serve api` process and Plugins
// `wharf serve plugin http-poster` processes on one PostgreSQL database and one NATS bus,
// delivering to a receiver in this process that answers after Delay.
type PosterOptions struct {
	N       int
	SizeKiB int
	Plugins int
	Delay   time.Duration
	// MaxConcurrent is the target's max_concurrent, the attempts each plugin process runs
	// at once; zero keeps the target's default.
	MaxConcurrent int
	// Senders is how many clients send through the REST API at once; zero means 16.
	Senders  int
	Bin      string // the wharf binary
	Dir      string // a throwaway directory
	DBURL    string // PostgreSQL: the run gets a schema of its own there, dropped after
	Timeout  time.Duration
	Progress io.Writer
}

// PosterResult is what a run measured.
type PosterResult struct {
	N         int
	Plugins   int
	Elapsed   time.Duration // from the receiver's gate opening until the last arrival
	PerSecond float64
	// P50 and P95 are percentiles of the attempts claimed after the gate opened, from
	// the claim until the receiver's answer (the history lines of both).
	P50, P95  time.Duration
	Processes []ProcessUsage
}

// ProcessUsage is one process's CPU time over the run.
type ProcessUsage struct {
	Role string
	CPU  time.Duration
}

// posterTarget is the http-poster instance of the run, served by every plugin process.
const posterTarget = "sink"

// RunPoster feeds N documents through the API process while the receiver holds the posts,
// then lets them through and waits until every one reached the receiver; it checks that
// each arrived exactly once and that the database holds N delivered messages, and
// reports throughput and each process's CPU time from the gate's opening until the last
// arrival, and the attempts' latency.
func RunPoster(ctx context.Context, opt PosterOptions) (PosterResult, error) {
	res := PosterResult{N: opt.N, Plugins: opt.Plugins}
	switch {
	case opt.N <= 0 || opt.SizeKiB < 0:
		return res, errors.New("loadtest poster: -n must be positive and -size-kib not negative")
	case opt.Plugins <= 0:
		return res, errors.New("loadtest poster: at least one plugin process is needed")
	case opt.DBURL == "":
		return res, errors.New("loadtest poster: -db-url is required: processes of a distributed installation share PostgreSQL")
	case opt.Delay < 0 || opt.MaxConcurrent < 0 || opt.Senders < 0:
		return res, errors.New("loadtest poster: -delay, -concurrency and -senders must not be negative")
	}
	if opt.Senders == 0 {
		opt.Senders = 16
	}
	if opt.Timeout == 0 {
		opt.Timeout = 10 * time.Minute
	}
	progress := opt.Progress
	if progress == nil {
		progress = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()

	dbURL, drop, err := privateSchema(ctx, opt.DBURL)
	if err != nil {
		return res, err
	}
	defer drop()
	nats, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{ListenAddr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return res, fmt.Errorf("start the bus: %w", err)
	}
	defer nats.Close()
	recv, err := startReceiver(opt.Delay)
	if err != nil {
		return res, err
	}
	defer recv.close()

	procs, err := startPosterProcesses(ctx, opt, dbURL, "nats://"+nats.Addr().String(), recv.url)
	if err != nil {
		return res, err
	}
	defer procs.kill()
	fmt.Fprintf(progress, "round with %d plugin process(es): %d documents of %d KiB\n", opt.Plugins, opt.N, opt.SizeKiB)

	// The backlog is built first, through the API, while the receiver holds every post:
	// each plugin process is then busy with as many attempts as it runs at once, and
	// the REST API's pace is no part of what is measured.
	feed := newFeeder(procs.api, posterTarget, "acme", make([]byte, opt.SizeKiB*1024), opt.Senders)
	fedFrom := time.Now()
	if err := feed.feed(ctx, opt.N, opt.Senders); err != nil {
		return res, fmt.Errorf("feed the API: %w: %s", err, procs.api.Logs())
	}
	fmt.Fprintf(progress, "backlog of %d documents fed through the API at %.0f/s; letting the posts through\n", opt.N, float64(opt.N)/time.Since(fedFrom).Seconds())
	before, err := procs.cpu()
	if err != nil {
		return res, err
	}
	start := recv.open()
	if err := recv.waitFor(ctx, opt.N); err != nil {
		return res, fmt.Errorf("%w: %s", err, procs.logs())
	}
	res.Elapsed = lastArrival(recv).Sub(start)
	after, err := procs.cpu()
	if err != nil {
		return res, err
	}
	if err := recv.checkExactlyOnce(feed.sent); err != nil {
		return res, err
	}
	if err := waitAllDelivered(ctx, procs.api, opt.N); err != nil {
		return res, err
	}
	if res.P50, res.P95, err = attemptLatencies(ctx, dbURL, start); err != nil {
		return res, err
	}
	if err := procs.stop(); err != nil {
		return res, err
	}
	res.PerSecond = float64(opt.N) / res.Elapsed.Seconds()
	for i := range procs.all() {
		res.Processes = append(res.Processes, ProcessUsage{Role: procs.roles[i], CPU: after[i] - before[i]})
	}
	return res, nil
}

// lastArrival is when the last message reached the receiver.
func lastArrival(r *receiver) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for _, t := range r.arrived {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// posterProcesses are the API process and the plugin processes of a run.
type posterProcesses struct {
	api     *Instance
	plugins []*Instance
	roles   []string // of all(), in order
}

func (p *posterProcesses) all() []*Instance { return append([]*Instance{p.api}, p.plugins...) }

// startPosterProcesses starts the API process, configures the target through it, then
// starts the plugin processes and waits until each is ready. They share the key files the
// API process creates and one payload directory, as hosts of an installation would.
func startPosterProcesses(ctx context.Context, opt PosterOptions, dbURL, natsURL, receiverURL string) (*posterProcesses, error) {
	keys := filepath.Join(opt.Dir, "keys")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		return nil, err
	}
	env := []string{"WHARF_NATS_URL=" + natsURL,
		"WHARF_SECRETS_KEY_FILE=" + filepath.Join(keys, "secrets.key"),
		"WHARF_AUDIT_KEY_FILE=" + filepath.Join(keys, "audit.key"),
		"WHARF_SESSION_KEY_FILE=" + filepath.Join(keys, "session.key"),
		"WHARF_PAYLOAD_DIR=" + filepath.Join(opt.Dir, "payloads")}
	p := &posterProcesses{roles: []string{"api"}}
	api, err := NewInstance(opt.Bin, filepath.Join(opt.Dir, "api"), dbURL)
	if err != nil {
		return nil, err
	}
	api.Args, api.Env = []string{"serve", "api"}, env
	if err := api.Start(ctx); err != nil {
		return nil, err
	}
	p.api = api
	if err := api.CreateToken(ctx, "loadtest"); err != nil {
		p.kill()
		return nil, err
	}
	// The posts held while the backlog builds must not time out.
	target := map[string]any{"name": posterTarget, "enabled": true, "url": receiverURL, "timeout": "1h"}
	if opt.MaxConcurrent > 0 {
		target["max_concurrent"] = opt.MaxConcurrent
	}
	for _, call := range []struct {
		path string
		body any
	}{
		{"/api/v1/partners", map[string]any{"name": "acme"}},
		{"/api/v1/plugins/configs/http-poster", target},
	} {
		if err := api.API(ctx, "POST", call.path, call.body, nil); err != nil {
			p.kill()
			return nil, fmt.Errorf("prepare the installation: %w", err)
		}
	}
	for i := range opt.Plugins {
		in, err := NewInstance(opt.Bin, filepath.Join(opt.Dir, fmt.Sprintf("plugin-%d", i+1)), dbURL)
		if err != nil {
			p.kill()
			return nil, err
		}
		in.Args, in.Env = []string{"serve", "plugin", "http-poster", posterTarget}, append(slices.Clone(env), "WHARF_PROBE_ADDR="+in.Addr)
		if err := in.Start(ctx); err != nil {
			p.kill()
			return nil, err
		}
		p.plugins = append(p.plugins, in)
		p.roles = append(p.roles, fmt.Sprintf("plugin %d", i+1))
	}
	for _, in := range p.plugins {
		if err := in.waitReady(ctx); err != nil {
			p.kill()
			return nil, err
		}
	}
	return p, nil
}

// cpu reads every process's CPU time so far.
func (p *posterProcesses) cpu() ([]time.Duration, error) {
	var out []time.Duration
	for _, in := range p.all() {
		c, err := in.CPU()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// stop ends the plugin processes, then the API process, each with SIGTERM.
func (p *posterProcesses) stop() error {
	var errs []error
	for _, in := range append(slices.Clone(p.plugins), p.api) {
		if _, err := in.Stop(time.Minute); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// kill ends whatever still runs.
func (p *posterProcesses) kill() {
	for _, in := range p.all() {
		if in != nil {
			in.Kill()
		}
	}
}

// logs is what every process wrote, for an error.
func (p *posterProcesses) logs() string {
	out := ""
	for i, in := range p.all() {
		out += fmt.Sprintf("\n--- %s:\n%s", p.roles[i], in.Logs())
	}
	return out
}

// waitReady polls /readyz until the process's roles have started.
func (in *Instance) waitReady(ctx context.Context) error {
	for {
		resp, err := http.Get("http://" + in.Addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w: %s", strings.Join(in.Args, " "), ctx.Err(), in.Logs())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
