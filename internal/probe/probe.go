// Package probe answers the questions load balancers and orchestrators ask every Wharf
// process: /healthz (is it alive), /readyz (can it work: its database and bus answer and
// every role it runs has started), and, beside them, /metrics. The API process serves them
// on its REST listener; a process without one (a plugin or sweeper role) serves them on
// an address of its own with Serve.
package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Part states in a Readiness.
const (
	OK          = "ok"
	Unavailable = "unavailable"
	// Starting is a process whose roles have not all started yet; Stopping one that
	// is shutting down.
	Starting = "starting"
	Stopping = "stopping"
)

// Readiness is what /readyz reports: each part OK or why not.
type Readiness struct {
	Status   string `json:"status"`
	Database string `json:"database"`
	Bus      string `json:"bus"`
	// Roles is OK once every role the process runs has started, Starting before,
	// Stopping once shutdown began.
	Roles string `json:"roles"`
	// Waiting names the roles not started yet.
	Waiting []string `json:"waiting,omitempty"`
}

// Ready reports whether every part is OK.
func (r Readiness) Ready() bool { return r.Database == OK && r.Bus == OK && r.Roles == OK }

// Checker is the process's check of what it depends on (the gateway's health monitor).
type Checker interface {
	Check(ctx context.Context) Readiness
}

// Healthz is the liveness check: it answers while the process serves.
func Healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// Readyz answers the readiness check from c: 200 when ready, else 503, so traffic goes
// elsewhere; the body names what is not. A nil c reports ready.
func Readyz(c Checker) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rd := Readiness{Database: OK, Bus: OK, Roles: OK}
		if c != nil {
			rd = c.Check(r.Context())
		}
		status := http.StatusOK
		rd.Status = OK
		if !rd.Ready() {
			status, rd.Status = http.StatusServiceUnavailable, Unavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(rd)
	}
}

// Handler serves /healthz, /readyz from c and /metrics from metrics (left out when nil).
func Handler(c Checker, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", Healthz)
	mux.Handle("GET /readyz", Readyz(c))
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return mux
}

// Server serves a Handler on a listener of its own.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Time-outs of the probe listener: its answers are small and its clients quick.
const (
	probeReadTimeout = 10 * time.Second
	probeIdleTimeout = time.Minute
)

// Serve answers h on ln until Stop; ln is the plugin or sweeper process's own metrics and
// health address.
func Serve(ln net.Listener, h http.Handler, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{ln: ln, done: make(chan struct{}), srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: probeReadTimeout,
		ReadTimeout:       probeReadTimeout,
		WriteTimeout:      probeReadTimeout,
		IdleTimeout:       probeIdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("probe listener stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s
}

// Addr is the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Stop ends the listener, letting requests in progress finish until ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	if err != nil {
		return fmt.Errorf("stop the probe listener: %w", err)
	}
	return nil
}
