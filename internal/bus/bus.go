// Package bus is Wharf's internal bus on NATS: wake-ups for target workers, live events
// for the UI, config-change notices and request/reply between processes.
//
// The database is the source of truth; the bus only says "look now". Messages on it are
// lossy by design — a lost wake-up is caught up by the sweep — so publishing never waits
// for a subscriber and never blocks a caller for long.
//
// Standalone runs an embedded server inside the process with no TCP port (StartEmbedded);
// distributed processes connect to an external cluster (Connect). Both give a *Bus with
// the same methods.
package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"wharf/internal/persistence"
)

// ConfigChangedSubject announces that configuration was committed, so every process
// reloads what it caches of it; the message says what changed (ConfigChangedPlugins,
// ConfigChangedPauses).
const ConfigChangedSubject = "config.changed"

// What a ConfigChangedSubject message says changed.
const (
	// ConfigChangedPlugins: a plugin instance's record.
	ConfigChangedPlugins = "plugins"
	// ConfigChangedPauses: a partner was paused or resumed.
	ConfigChangedPauses = "pauses"
)

// AllMessageEventsSubject matches the events of every message, for live feeds.
const AllMessageEventsSubject = "message.*"

// WakeupSubject is where dispatch and the sweep tell a target's workers to look for due
// deliveries. Instance names hold no '.', '*' or '>', so each is a single subject token.
func WakeupSubject(target persistence.InstanceName) string { return "delivery." + string(target) }

// Publisher is the part of a bus that wakes workers.
type Publisher interface {
	Publish(subject string, data []byte) error
}

// WakeTargets publishes one wake-up per named target instance, each once, for modules
// whose own queues the engine's workers claim; a nil bus wakes nobody (the workers poll).
func WakeTargets(p Publisher, names []string) {
	if p == nil {
		return
	}
	for _, n := range slices.Compact(slices.Sorted(slices.Values(names))) {
		_ = p.Publish(WakeupSubject(persistence.InstanceName(n)), nil)
	}
}

// MessageEventSubject carries the history of one message as it is committed.
func MessageEventSubject(messageID int64) string {
	return "message." + strconv.FormatInt(messageID, 10)
}

// ErrNoResponders means a request found nobody subscribed to answer it.
var ErrNoResponders = nats.ErrNoResponders

const (
	// drainTimeout bounds Close: in-flight handlers get this long to finish.
	drainTimeout = 5 * time.Second
	// writeTimeout bounds how long a publish waits for the connection to take bytes when
	// its outbound buffer is full.
	writeTimeout = 2 * time.Second
	// defaultFlushTimeout applies when Flush is given a context without a deadline.
	defaultFlushTimeout = 5 * time.Second
)

// Bus is a connection to the internal bus, owning the embedded server when there is one.
// It is safe for concurrent use.
type Bus struct {
	nc     *nats.Conn
	srv    *server.Server // nil for an external cluster
	logger *slog.Logger
	closed chan struct{} // closed by the client when the connection is closed

	closeOnce sync.Once
	closeErr  error
}

// EmbeddedOptions configures the in-process server of standalone mode.
type EmbeddedOptions struct {
	// ListenAddr, when set ("host:port", port 0 for any), also opens a TCP port so other
	// processes can join. Empty means in-process connections only. The port has no
	// authentication: bind it to loopback or a private network.
	ListenAddr string
	// Logger receives the server's and the client's messages; nil means slog.Default().
	Logger *slog.Logger
	// Debug passes the server's debug messages on (at debug level).
	Debug bool
}

// StartEmbedded starts a NATS server inside the process and connects to it without a
// network round trip. JetStream stays off: the database is the store.
func StartEmbedded(ctx context.Context, opt EmbeddedOptions) (*Bus, error) {
	logger := opt.Logger
	if logger == nil {
		logger = slog.Default()
	}
	sopts := &server.Options{
		ServerName: "wharf",
		DontListen: opt.ListenAddr == "",
		// The process owns its signals and its logging.
		NoSigs: true,
		NoLog:  true,
	}
	if opt.ListenAddr != "" {
		host, portText, err := net.SplitHostPort(opt.ListenAddr)
		if err != nil {
			return nil, fmt.Errorf("start embedded bus: listen address: %w", err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("start embedded bus: listen address %s: invalid port", opt.ListenAddr)
		}
		if port == 0 {
			port = server.RANDOM_PORT
		}
		sopts.Host, sopts.Port = host, port
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("start embedded bus: %w", err)
	}
	srv.SetLogger(serverLogger{logger.With("component", "nats-server")}, opt.Debug, false)
	srv.Start()
	if err := waitReady(ctx, srv); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("start embedded bus: %w", err)
	}
	if addr := srv.Addr(); addr != nil {
		logger.Info("bus listening for other processes", "addr", addr.String())
		if tcp, ok := addr.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
			logger.Warn("bus port is reachable from other hosts and has no authentication; bind it to a private network", "addr", addr.String())
		}
	}
	b, err := connect(ctx, "", logger, nats.InProcessServer(srv))
	if err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("start embedded bus: %w", err)
	}
	b.srv = srv
	return b, nil
}

// waitReady polls the starting server until it accepts clients or ctx ends.
func waitReady(ctx context.Context, srv *server.Server) error {
	for !srv.ReadyForConnections(50 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("server not ready: %w", err)
		}
	}
	return nil
}

// Connect joins an external NATS cluster; url may list several servers separated by
// commas. The connection reconnects forever: while it is down, publishes are buffered
// and then dropped, which wake-ups tolerate. Errors never repeat the URL, which may hold
// credentials.
func Connect(ctx context.Context, url string, logger *slog.Logger, auth ...Auth) (*Bus, error) {
	if logger == nil {
		logger = slog.Default()
	}
	var extra []nats.Option
	for _, a := range auth {
		opts, err := a.options()
		if err != nil {
			return nil, fmt.Errorf("connect to bus: %w", err)
		}
		extra = append(extra, opts...)
	}
	b, err := connect(ctx, url, logger, extra...)
	if err != nil {
		return nil, fmt.Errorf("connect to bus: %w", err)
	}
	return b, nil
}

func connect(ctx context.Context, url string, logger *slog.Logger, extra ...nats.Option) (*Bus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := &Bus{logger: logger, closed: make(chan struct{})}
	opts := []nats.Option{
		nats.Name("wharf"),
		nats.MaxReconnects(-1),
		nats.DrainTimeout(drainTimeout),
		nats.FlusherTimeout(writeTimeout),
		nats.ClosedHandler(func(*nats.Conn) { close(b.closed) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				logger.Warn("bus disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { logger.Info("bus reconnected") }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			// A slow subscriber loses messages here; for wake-ups and live events that is
			// by design, but it is worth seeing.
			if sub != nil {
				logger.Warn("bus subscription error", "subject", sub.Subject, "err", err)
				return
			}
			logger.Warn("bus error", "err", err)
		}),
	}
	if deadline, ok := ctx.Deadline(); ok {
		opts = append(opts, nats.Timeout(max(time.Until(deadline), time.Millisecond)))
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		nc.Close()
		return nil, err
	}
	b.nc = nc
	return b, nil
}

// Addr is the TCP address the embedded server listens on for other processes, or nil
// when it has none (the default) or the bus is a client of an external cluster.
func (b *Bus) Addr() net.Addr {
	if b.srv == nil {
		return nil
	}
	return b.srv.Addr()
}

// Publish sends data on subject without waiting for anyone to receive it.
func (b *Bus) Publish(subject string, data []byte) error {
	if err := b.nc.Publish(subject, data); err != nil {
		return fmt.Errorf("publish %s: %w", subject, err)
	}
	return nil
}

// Subscription is one subscriber's interest in a subject.
type Subscription struct {
	sub *nats.Subscription
}

// Unsubscribe stops deliveries to the subscriber; messages already queued for it are
// dropped.
func (s Subscription) Unsubscribe() error {
	if s.sub == nil {
		return nil
	}
	if err := s.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrBadSubscription) && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("unsubscribe %s: %w", s.sub.Subject, err)
	}
	return nil
}

// Subscribe calls fn for each message on subject (wildcards '*' and '>' allowed). Calls
// for one subscription run one at a time, in order, on a goroutine the client owns.
func (b *Bus) Subscribe(subject string, fn func(subject string, data []byte)) (Subscription, error) {
	sub, err := b.nc.Subscribe(subject, func(m *nats.Msg) { fn(m.Subject, m.Data) })
	if err != nil {
		return Subscription{}, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	return Subscription{sub: sub}, nil
}

// Respond answers requests on subject with what fn returns. Calls run one at a time per
// responder, like Subscribe.
func (b *Bus) Respond(subject string, fn func(subject string, data []byte) []byte) (Subscription, error) {
	sub, err := b.nc.Subscribe(subject, func(m *nats.Msg) {
		reply := fn(m.Subject, m.Data)
		if m.Reply == "" {
			return
		}
		if err := m.Respond(reply); err != nil {
			b.logger.Warn("bus reply failed", "subject", m.Subject, "err", err)
		}
	})
	if err != nil {
		return Subscription{}, fmt.Errorf("respond on %s: %w", subject, err)
	}
	return Subscription{sub: sub}, nil
}

// Request sends data on subject and waits, until ctx ends, for the first reply. With no
// responder it fails at once with ErrNoResponders.
func (b *Bus) Request(ctx context.Context, subject string, data []byte) ([]byte, error) {
	m, err := b.nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", subject, err)
	}
	return m.Data, nil
}

// Flush waits until the server has processed everything published so far, so a caller
// can be sure its messages left the process (not that anyone received them).
func (b *Bus) Flush(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultFlushTimeout)
		defer cancel()
	}
	if err := b.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("flush bus: %w", err)
	}
	return nil
}

// Close drains the connection — subscribers finish the messages they hold, publishes
// still buffered are sent — then shuts the embedded server down. The bus closes last in a
// shutdown, after every service that publishes on it. Calling Close again does nothing.
func (b *Bus) Close() error {
	b.closeOnce.Do(func() {
		if err := b.nc.Drain(); err != nil {
			b.nc.Close()
		}
		select {
		case <-b.closed:
		case <-time.After(drainTimeout + time.Second):
			// The client enforces drainTimeout itself; this only guards against a
			// close notification that never comes.
			b.nc.Close()
			b.closeErr = errors.New("close bus: drain did not finish")
		}
		if err := b.nc.LastError(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && b.closeErr == nil {
			b.closeErr = fmt.Errorf("close bus: %w", err)
		}
		if b.srv != nil {
			b.srv.Shutdown()
			b.srv.WaitForShutdown()
		}
	})
	return b.closeErr
}

// serverLogger passes the embedded server's messages to slog. Its notices (start-up
// banners, "server is ready") are routine, so they go out at debug level.
type serverLogger struct{ l *slog.Logger }

func (s serverLogger) Noticef(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s serverLogger) Warnf(format string, v ...any)   { s.l.Warn(fmt.Sprintf(format, v...)) }
func (s serverLogger) Fatalf(format string, v ...any)  { s.l.Error(fmt.Sprintf(format, v...)) }
func (s serverLogger) Errorf(format string, v ...any)  { s.l.Error(fmt.Sprintf(format, v...)) }
func (s serverLogger) Debugf(format string, v ...any)  { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s serverLogger) Tracef(format string, v ...any)  { s.l.Debug(fmt.Sprintf(format, v...)) }
