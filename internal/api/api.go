// Package api serves Wharf's REST API under /api/v1 and the load balancers' /healthz.
//
// Every route is listed once, in (*Server).routes, as data: the router mounts that table
// and a test holds it equal to the OpenAPI document. Everything under /api/v1 requires an
// API token except the OpenAPI document itself, which describes the API and holds nothing
// of the installation.
package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"wharf/internal/auth/oidc"
	"wharf/internal/events"
	"wharf/internal/httproute"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// Payloads opens stored payload blobs by persistence.Payload.Key.
type Payloads interface {
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// Ops are the operator actions and run-time views the API asks of the running system.
type Ops interface {
	// Redispatch matches the routes again for a message, adds missing deliveries and
	// requeues queued and stalled ones; it returns the deliveries now due.
	Redispatch(ctx context.Context, messageID int64, actor string) ([]persistence.Delivery, error)
	// Redeliver requeues one failed, stalled, retrying or delivered delivery.
	Redeliver(ctx context.Context, deliveryID int64, mode persistence.ResendMode, actor string) (persistence.Delivery, error)
	SessionOps
	DeadLetterOps
	// RoutesChanged tells the system that routes or plugin configs changed, so the route
	// cache reloads.
	RoutesChanged(ctx context.Context)
	// SettingsChanged tells the system that settings changed, so they apply at once.
	SettingsChanged(ctx context.Context)
	// Services lists every plugin instance's service state.
	Services(ctx context.Context) []ServiceStatus
	// StartService, StopService and RestartService act on one instance; an unknown name
	// is an error wrapping persistence.ErrNotFound.
	StartService(ctx context.Context, name persistence.InstanceName) error
	StopService(ctx context.Context, name persistence.InstanceName) error
	RestartService(ctx context.Context, name persistence.InstanceName) error
}

// ServiceState is where a plugin instance's service stands.
type ServiceState string

const (
	ServiceRunning  ServiceState = "running"
	ServiceStopped  ServiceState = "stopped"
	ServiceFailed   ServiceState = "failed"
	ServiceDisabled ServiceState = "disabled"
	// ServiceDegraded is a running instance while the database or the bus is out of reach.
	ServiceDegraded ServiceState = "degraded"
)

// ServiceStatus is one plugin instance's service as GET /api/v1/services shows it.
type ServiceStatus struct {
	Name    persistence.InstanceName `json:"name"`
	Type    persistence.PluginType   `json:"type"`
	Role    module.Role              `json:"role"`
	Enabled bool                     `json:"enabled"`
	State   ServiceState             `json:"state"`
	// Error is the reason of a failed state, shown to the operator.
	Error string    `json:"error"`
	Since time.Time `json:"since"`
}

// Deps is what the API consumes.
type Deps struct {
	Store    persistence.Store
	Payloads Payloads
	Ingest   module.Ingester
	Ops      Ops
	Sealer   module.Sealer
	Logger   *slog.Logger
	Version  string
	// Modules are the modules' routes, descriptions and message panels.
	Modules []ModuleAPI
	// OIDC verifies identity providers' access tokens sent as bearer tokens; nil accepts
	// API tokens only.
	OIDC *oidc.Manager
	// Health answers /readyz and hears of requests the database failed; nil reports
	// ready.
	Health Health
	// Storage reports and tests the payload storage; nil answers 503 on its routes.
	Storage Storage
	// Events serves GET /api/v1/events; nil answers 503.
	Events *events.Stream

	// Callbacks takes signed status callbacks; nil answers 503 on their route.
	Callbacks Callbacks

	// Erasure erases messages' content; nil answers 503 on its routes.
	Erasure Erasure
}

// Server serves the REST API.
type Server struct {
	store    persistence.Store
	payloads Payloads
	ingest   module.Ingester
	ops      Ops
	sealer   module.Sealer
	log      *slog.Logger
	version  string
	started  time.Time
	modules  []ModuleAPI
	document []byte // the OpenAPI document with the modules' fragments
	oidc     *oidc.Manager
	ready    Health // Deps.Health
	storage  Storage
	// eventStream is Deps.Events.
	eventStream *events.Stream

	callbacks Callbacks // Deps.Callbacks

	erasure Erasure
}

// New builds the server. A nil Logger discards. A module fragment that does not merge
// into the OpenAPI document is a programming error and panics at start.
func New(d Deps) *Server {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	frags := make([][]byte, 0, len(d.Modules))
	for _, m := range d.Modules {
		if len(m.OpenAPI) > 0 {
			frags = append(frags, m.OpenAPI)
		}
	}
	doc, err := MergeOpenAPI(openAPIDocument, frags...)
	if err != nil {
		panic(err)
	}
	return &Server{
		modules:  d.Modules,
		document: doc,
		store:    d.Store,
		payloads: d.Payloads,
		ingest:   d.Ingest,
		ops:      d.Ops,
		sealer:   d.Sealer,
		log:      log,
		version:  d.Version,
		started:  time.Now(),
		oidc:     d.OIDC,
		ready:    d.Health,
		storage:  d.Storage,

		eventStream: d.Events,

		callbacks: d.Callbacks,

		erasure: d.Erasure,
	}
}

// Handler serves the routes of the table, with request ids, access logging and panic
// recovery around everything; a path under /api/v1/ that no route serves answers a JSON
// 404 (or 405 with Allow when the path exists for other methods).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.pattern(), s.wrap(rt))
	}
	mux.Handle("/api/v1/", s.fallback(mux))
	return s.withRequest(httproute.Note(mux))
}
