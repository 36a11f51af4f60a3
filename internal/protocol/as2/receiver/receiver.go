package receiver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"wharf/internal/alert"
	"wharf/internal/bodyrate"
	"wharf/internal/httproute"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
	"wharf/internal/telemetry"
)

// MDNIntake takes the asynchronous MDNs partners post to the receiver's mdn_path; the
// sender implements it. An error wrapping persistence.ErrNotFound (no message awaits
// this MDN) is answered 404, persistence.ErrConflict 409, one the partner caused (a cms
// or mime failure class, a *persistence.FieldError, or one of Deps.MDNFaults) 400, and
// the rest 500, so the partner posts again.
type MDNIntake interface {
	AcceptMDN(ctx context.Context, contentType string, header http.Header, body []byte) error
}

// Deps is what a receiver needs from the gateway.
type Deps struct {
	// Directory resolves the partner and organization profiles of a request.
	Directory profile.Directory
	// DB holds the module's tables (as2_inbound, as2_mdn_jobs).
	DB     module.SQL
	Ingest module.Ingester
	Blobs  module.Blobs
	Store  persistence.Store
	// Certs opens the TLS certificate when the config names one.
	Certs  module.Certificates
	Logger *slog.Logger
	// MDNIntake takes asynchronous MDNs for our messages; nil answers mdn_path with 404.
	MDNIntake MDNIntake
	// MDNFaults are further errors of MDNIntake that the partner caused (the intake's
	// own "invalid MDN" class), answered 400.
	MDNFaults []error
	// BaseURL is the gateway's public URL, without a trailing slash.
	BaseURL string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// HTTPClient posts asynchronous MDNs; nil means a client that follows no redirects.
	HTTPClient *http.Client
	// TempDir holds the bodies and decompressed layers of large messages while they are
	// handled; empty means os.TempDir(). Start creates it when missing.
	TempDir string
	// Alerts takes mdn_undeliverable; nil discards.
	Alerts alert.Raiser
	// Metrics counts requests in progress and refusals; nil counts nothing.
	Metrics Metrics
	// Product returns the product string for Server, User-Agent and the MDN's
	// Reporting-UA; nil shows the version.
	Product func() string
	// Telemetry gives each request a span continuing the sender's traceparent, so an
	// exchange between two gateways that trace is one trace; nil traces nothing.
	Telemetry *telemetry.Telemetry
}

// Receiver is a running as2-receiver instance: an HTTP(S) listener for AS2 messages and
// asynchronous MDNs, and a background loop that sends queued MDNs and finishes messages
// a crash interrupted.
type Receiver struct {
	name persistence.InstanceName
	cfg  Config
	deps Deps
	log  *slog.Logger
	now  func() time.Time
	// metrics is Deps.Metrics, or one that counts nothing.
	metrics Metrics
	// slots bounds the requests in progress. A request that finds none free waits for
	// one up to queueWait, as one of at most as many waiters as there are slots, and is
	// refused otherwise; either way before its body is read.
	slots     chan struct{}
	waiters   chan struct{}
	queueWait time.Duration
	// perAddress and perPartner keep one source or one partner from taking every slot.
	perAddress, perPartner *keyedLimit
	client                 *http.Client
	// staleAfter is how long a reserved row may stay unrenewed before another request
	// or the background loop takes it over; renewEvery is how often the request that
	// holds it renews it (see reservationLease).
	staleAfter, renewEvery time.Duration
	// rows runs the reservations and answers of concurrent requests in shared
	// transactions.
	rows *rowWriter
	// jobLease is how long a claimed asynchronous MDN job may stay unrenewed before any
	// process's background loop takes it again; jobRenew is how often the worker
	// posting it renews it (see sendLease).
	jobLease, jobRenew time.Duration
	// backoff is the delay after the n-th failed attempt to send an asynchronous MDN.
	backoff     func(attempt int) time.Duration
	maxAttempts int
	// tick is the background loop's period.
	tick time.Duration
	// host is the gateway's public host name (from Deps.BaseURL), naming us in MDNs.
	host string
	// tempDir holds large bodies and layers; a body larger than spoolAbove bytes goes
	// there rather than into memory.
	tempDir    string
	spoolAbove int64
	// maxAEAD bounds an AES-GCM body opened in one pass (mime.DefaultMaxAEADSize; one larger
	// is refused naming the bound, docs/as2.md). AES-CBC bodies stream at any size.
	maxAEAD int64

	wake chan struct{}
	// large is signalled when a large message's request is over (see freeMemory).
	large chan struct{}
	// unknown counts requests of unknown senders until writeUnknown, woken by
	// unknownWake, writes them.
	unknown     unknownTally
	unknownWake chan struct{}

	mu      sync.Mutex
	started bool
	srv     *http.Server
	ln      net.Listener
	// lns are all listeners, ln first, with their schemes.
	lns     []net.Listener
	schemes []string
	stop    context.CancelFunc // ends the background loop
	loop    sync.WaitGroup
}

var _ module.Service = (*Receiver)(nil)

// New builds a receiver from a validated config; it listens once started.
func New(deps Deps, name persistence.InstanceName, cfg *Config) (module.Service, error) {
	return newReceiver(deps, name, cfg)
}

func newReceiver(deps Deps, name persistence.InstanceName, cfg *Config) (*Receiver, error) {
	if cfg == nil {
		return nil, fmt.Errorf("as2-receiver %s: no config", name)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("as2-receiver %s: %w", name, err)
	}
	switch {
	case deps.Directory == nil:
		return nil, fmt.Errorf("as2-receiver %s: no profile directory", name)
	case deps.DB == nil:
		return nil, fmt.Errorf("as2-receiver %s: no database", name)
	case deps.Ingest == nil:
		return nil, fmt.Errorf("as2-receiver %s: no ingester", name)
	case deps.Blobs == nil || deps.Store == nil:
		return nil, fmt.Errorf("as2-receiver %s: no payload store", name)
	case cfg.TLSCertificateID != nil && deps.Certs == nil:
		return nil, fmt.Errorf("as2-receiver %s: tls_certificate_id is set but no certificate store was given", name)
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := deps.Now
	if now == nil {
		now = time.Now
	}
	client := deps.HTTPClient
	if client == nil {
		client = &http.Client{
			Timeout: 2 * time.Minute,
			// An MDN goes to the vouched-for URL only, never where a redirect points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			// An async MDN's request has a span, and the partner's receiver may continue it.
			Transport: deps.Telemetry.Transport(nil, "as2 mdn send"),
		}
	}
	var host string
	if u, err := url.Parse(deps.BaseURL); err == nil {
		host = u.Hostname()
	}
	tempDir := deps.TempDir
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	var metrics Metrics = noMetrics{}
	if deps.Metrics != nil {
		metrics = deps.Metrics
	}
	return &Receiver{
		metrics:     metrics,
		host:        host,
		tempDir:     tempDir,
		spoolAbove:  defaultSpoolAbove,
		maxAEAD:     mime.DefaultMaxAEADSize,
		name:        name,
		cfg:         *cfg,
		deps:        deps,
		log:         log.With("plugin", string(persistence.PluginAS2Receiver)),
		now:         now,
		slots:       make(chan struct{}, cfg.MaxConcurrentRequests),
		waiters:     make(chan struct{}, cfg.MaxConcurrentRequests),
		queueWait:   defaultQueueWait,
		perAddress:  newKeyedLimit(cfg.MaxRequestsPerAddress),
		perPartner:  newKeyedLimit(cfg.MaxRequestsPerPartner),
		rows:        newRowWriter(deps.DB),
		client:      client,
		staleAfter:  reservationLease,
		renewEvery:  reservationRenew,
		jobLease:    sendLease,
		jobRenew:    sendRenew,
		backoff:     defaultBackoff,
		maxAttempts: defaultMaxAttempts,
		tick:        5 * time.Second,
		wake:        make(chan struct{}, 1),
		large:       make(chan struct{}, 1),
		unknownWake: make(chan struct{}, 1),
	}, nil
}

// Asynchronous MDN delivery: ten attempts over about four hours.
const defaultMaxAttempts = 10

func defaultBackoff(attempt int) time.Duration {
	d := 30 * time.Second << min(attempt-1, 10)
	return min(d, 2*time.Hour)
}

// Handler returns the receiver's HTTP routes, with the concurrency limit.
func (rc *Receiver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+rc.cfg.Path, rc.handleMessage)
	mux.HandleFunc("POST "+rc.cfg.MDNPath, rc.handleMDN)
	// The span of a request is named by the path pattern that served it.
	return rc.serverHeader(rc.deps.Telemetry.Handler(rc.limit(httproute.Note(mux)), ""))
}

// defaultQueueWait is how long a request waits for a slot when every one is taken: a
// partner sending a few more requests at once than the limit has them served a moment
// later rather than refused and sent again after Retry-After.
const defaultQueueWait = 2 * time.Second

// limit refuses a request when its remote address has too many in progress or it gets
// no slot (see acquire), before its body is read, so a flood costs neither memory nor a
// database round trip; and it paces the body (see bodyrate), so a client that trickles
// it holds its slot only briefly.
func (rc *Receiver) limit(next http.Handler) http.Handler {
	next = bodyrate.Handler(next, bodyrate.Limits{
		Idle:    time.Duration(rc.cfg.BodyIdleTimeout),
		MinRate: rc.cfg.MinBodyBytesPerSecond,
		Whole:   time.Duration(rc.cfg.ReadTimeout),
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := remoteHost(r.RemoteAddr)
		if !rc.perAddress.acquire(addr) {
			rc.refused(refusedAddressLimit)
			rc.tooMany(w, r, "too many AS2 requests in progress from this address", "limit", rc.cfg.MaxRequestsPerAddress)
			return
		}
		defer rc.perAddress.release(addr)
		if !rc.acquire(r.Context()) {
			rc.refused(refusedBusy)
			w.Header().Set("Retry-After", "30")
			w.Header().Set("Connection", "close")
			http.Error(w, "busy: too many AS2 requests in progress, retry later", http.StatusServiceUnavailable)
			rc.log.Warn("AS2 request refused: too many requests in progress", "remote", r.RemoteAddr,
				"limit", rc.cfg.MaxConcurrentRequests)
			return
		}
		defer func() { <-rc.slots }()
		done := rc.metrics.Began(protocol, rc.name)
		defer done()
		next.ServeHTTP(w, r)
	})
}

// acquire takes a slot. When every slot is taken it waits up to queueWait for one, unless
// as many requests as there are slots wait already or the request ends first.
func (rc *Receiver) acquire(ctx context.Context) bool {
	select {
	case rc.slots <- struct{}{}:
		return true
	default:
	}
	select {
	case rc.waiters <- struct{}{}:
	default:
		return false
	}
	defer func() { <-rc.waiters }()
	t := time.NewTimer(rc.queueWait)
	defer t.Stop()
	select {
	case rc.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// Start listens and starts the background loop.
func (rc *Receiver) Start(ctx context.Context) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.started {
		return fmt.Errorf("as2-receiver %s: already started", rc.name)
	}
	if err := os.MkdirAll(rc.tempDir, 0o700); err != nil {
		return fmt.Errorf("as2-receiver %s: temporary directory: %w", rc.name, err)
	}
	if err := removeStaleSpools(rc.tempDir, rc.now().Add(-staleSpool)); err != nil {
		rc.log.WarnContext(ctx, "stale temporary files not removed", "dir", rc.tempDir, "err", err)
	}
	var tlsConfig *tls.Config
	if id := rc.cfg.TLSCertificateID; id != nil {
		cert, key, err := rc.deps.Certs.Signer(ctx, *id)
		if err != nil {
			return fmt.Errorf("as2-receiver %s: TLS certificate %d: %w", rc.name, *id, err)
		}
		tlsConfig = &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}},
		}
	}
	var lns []net.Listener
	var schemes []string
	for _, spec := range rc.cfg.Listeners() {
		ln, err := net.Listen("tcp", spec.Addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("as2-receiver %s: listen on %s (%s): %w", rc.name, spec.Addr, spec.Scheme(), err)
		}
		if spec.TLS {
			ln = tls.NewListener(ln, tlsConfig)
		}
		lns, schemes = append(lns, ln), append(schemes, spec.Scheme())
	}
	rc.srv = &http.Server{
		Handler:           rc.Handler(),
		ReadHeaderTimeout: time.Duration(rc.cfg.ReadHeaderTimeout),
		ReadTimeout:       time.Duration(rc.cfg.ReadTimeout),
		WriteTimeout:      time.Duration(rc.cfg.WriteTimeout),
		IdleTimeout:       time.Duration(rc.cfg.IdleTimeout),
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(rc.log.Handler(), slog.LevelWarn),
		TLSConfig:         tlsConfig,
	}
	rc.ln, rc.lns, rc.schemes = lns[0], lns, schemes
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	rc.stop = stop
	rc.started = true
	srv := rc.srv
	rc.loop.Add(3 + len(lns))
	for i, ln := range lns {
		go func() {
			defer rc.loop.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				rc.log.Error("AS2 listener stopped", "scheme", schemes[i], "err", err)
			}
		}()
	}
	go func() {
		defer rc.loop.Done()
		rc.background(bg)
	}()
	go func() {
		defer rc.loop.Done()
		rc.freeMemory(bg)
	}()
	go func() {
		defer rc.loop.Done()
		rc.writeUnknown(bg)
	}()
	for i, ln := range lns {
		rc.log.Info("AS2 receiver listening", "addr", ln.Addr().String(), "scheme", schemes[i], "path", rc.cfg.Path, "mdn_path", rc.cfg.MDNPath)
	}
	return nil
}

// Listening describes each listener once started, as "address (scheme)", for the
// start-up summary and the services page.
func (rc *Receiver) Listening() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]string, len(rc.lns))
	for i, ln := range rc.lns {
		out[i] = ln.Addr().String() + " (" + rc.schemes[i] + ")"
	}
	return out
}

// TLSAddr is the HTTPS listener's address once started when tls_port opens one, else nil.
func (rc *Receiver) TLSAddr() net.Addr {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.cfg.TLSPort == nil || len(rc.lns) < 2 {
		return nil
	}
	return rc.lns[1].Addr()
}

// Addr is the listener's address once started (a chosen port is known only then).
func (rc *Receiver) Addr() net.Addr {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.ln == nil {
		return nil
	}
	return rc.ln.Addr()
}

// Stop stops taking requests, waits for those in progress and for the background loop
// to finish its current step, or until ctx ends.
func (rc *Receiver) Stop(ctx context.Context) error {
	rc.mu.Lock()
	if !rc.started {
		rc.mu.Unlock()
		return nil
	}
	rc.started = false
	srv, stop := rc.srv, rc.stop
	rc.mu.Unlock()

	err := srv.Shutdown(ctx)
	stop()
	done := make(chan struct{})
	go func() {
		rc.loop.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		srv.Close()
		return errors.Join(err, fmt.Errorf("as2-receiver %s: stop: %w", rc.name, ctx.Err()))
	}
	rc.flushUnknown(ctx)
	if err != nil {
		return fmt.Errorf("as2-receiver %s: stop: %w", rc.name, err)
	}
	return nil
}

// kick wakes the background loop to send a newly queued MDN.
func (rc *Receiver) kick() {
	select {
	case rc.wake <- struct{}{}:
	default:
	}
}

// freeAbove is the size of a body or payload past which the memory a request held is
// given back to the system once it is over.
const freeAbove = 32 << 20

// largeDone tells freeMemory that a large message's request is over.
func (rc *Receiver) largeDone() {
	select {
	case rc.large <- struct{}{}:
	default:
	}
}

// freeMemory collects the garbage a large message leaves and returns it to the system.
// The collector paces itself by the heap's peak: after a message of a hundred megabytes
// it would keep that much garbage for a long while, and the next large message would
// add to it rather than reuse it.
func (rc *Receiver) freeMemory(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-rc.large:
			debug.FreeOSMemory()
		}
	}
}
