// Package module is the seam between the core and the protocol modules. A module
// registers its plugin types once, from init; the core builds instances through them and
// never imports a module.
package module

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"wharf/internal/alert"
	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/telemetry"
)

// Role says which side of a route a plugin type stands on.
type Role string

const (
	RoleSource Role = "source"
	RoleTarget Role = "target"
)

// Config is a plugin type's own settings (without name and enabled). Validate returns a
// *persistence.FieldError naming the JSON field that is wrong.
type Config interface {
	Validate() error
}

// WriteOnly is implemented by configs with write-only fields (secret headers, passwords):
// it names their top-level JSON keys. Those values are sealed at rest and never returned.
type WriteOnly interface {
	WriteOnlyFields() []string
}

// CertificateUser is implemented by configs that name stored certificates (a TLS
// certificate): the certificates are marked as used by the instance, so they are not
// deleted under it. The map is JSON field → certificate id.
type CertificateUser interface {
	CertificateFields() map[string]int64
}

// Service is a running source instance.
type Service interface {
	Start(ctx context.Context) error
	// Stop quiesces and returns when in-flight work is done or ctx ends.
	Stop(ctx context.Context) error
}

// Plugin describes one plugin type.
type Plugin struct {
	Type persistence.PluginType
	Role Role
	// NewConfig returns a config with its defaults set, for decoding into.
	NewConfig func() Config
	// NewSource builds a source instance (RoleSource).
	NewSource func(env Env, name persistence.InstanceName, cfg Config) (Service, error)
	// NewTarget builds a target instance (RoleTarget).
	NewTarget func(env Env, name persistence.InstanceName, cfg Config) (delivery.Deliverer, error)
	// MessageIdentity marks a target whose messages carry an identity the receiving side
	// keeps (the AS2 Message-ID): a redeliver of an answered delivery then offers to send
	// again under it or as a new message (persistence.ResendMode), and the target acts on
	// the choice.
	MessageIdentity bool
}

// Module is a protocol module's registration.
type Module struct {
	Name    string
	Plugins []Plugin
	// Schema holds the module's own tables (see SchemaFS); nil when it has none.
	Schema SchemaFS
	// OpenAPI is a YAML OpenAPI 3.1 fragment (paths and components.schemas) describing
	// the runtime's APIRoutes; it joins the served document.
	OpenAPI []byte
	// Setup builds the module's runtime once per process, before any plugin instance. The
	// result reaches the module's plugins as Env.Runtime and may implement APIProvider,
	// MessagePanels and Stopper.
	Setup func(ctx context.Context, core Core) (any, error)
}

// Env is what the core hands a plugin instance.
type Env struct {
	Logger  *slog.Logger
	DataDir string
	Ingest  Ingester
	// Runtimes holds each module's Setup result by module name.
	Runtimes map[string]any
	// Alerts takes the alerts an instance raises (a file it cannot route); it never
	// blocks. Nil means alert.Discard.
	Alerts alert.Raiser
	// Product returns the product string Wharf sends now (see package product); nil
	// means the version is shown.
	Product func() string
	// Telemetry traces an instance's outgoing requests; nil traces nothing.
	Telemetry *telemetry.Telemetry
}

// ProductName is the product string for a User-Agent, Server or Reporting-UA field.
func (e Env) ProductName() string { return productName(e.Product) }

// Raiser returns Alerts, or alert.Discard when there is none.
func (e Env) Raiser() alert.Raiser {
	if e.Alerts == nil {
		return alert.Discard
	}
	return e.Alerts
}

// Runtime returns the Setup result of the named module.
func (e Env) Runtime(module string) any { return e.Runtimes[module] }

// Ingester takes documents from sources: it stores each durably and dispatches it.
type Ingester interface {
	// Ingest stores and dispatches a batch in one transaction. The result has one entry
	// per item; an item that cannot be taken (unknown party, bad name) has Err set and
	// nothing of it is stored. The error is for failures of the whole batch.
	Ingest(ctx context.Context, items []Incoming) ([]IngestResult, error)
}

// Incoming is one document a source hands over.
type Incoming struct {
	Source        persistence.InstanceName
	From          persistence.PartyName
	To            persistence.PartyName
	FileName      persistence.FileName
	Body          io.Reader
	CorrelationID string
	OriginEventID string
	// Metadata are named values the source supplies with the document (AS2 headers, a
	// sidecar's metadata object, a REST send's field), bounded as
	// persistence.NormalizeMetadata says; ordered routes may key sessions by one.
	Metadata map[string]string
	Actor    string
	// ByOperator marks a document a person or an API client sent by hand (a test message
	// too): an operator action, which the audit log records with the message.
	ByOperator bool
	// Extra are further payload stages stored with the document (the raw request and
	// its headers of a protocol that unwraps an envelope).
	Extra []ExtraPayload
	// Target, when set, sends the message to that target instance alone instead of
	// matching routes (a message sent by hand to a chosen target).
	Target persistence.InstanceName
	// Refused, when set, is why the source refused the document (a bad signature, a
	// replay, …), in plain words: the message is kept as a record with status refused
	// and no deliveries, its Extra stages (the request as received) for diagnosis. Body
	// is then optional: nil stores no document.
	Refused string
}

// ExtraPayload is one more stored stage of an incoming document.
type ExtraPayload struct {
	Stage persistence.PayloadStage
	Body  io.Reader
}

// IngestResult is the fate of one Incoming.
type IngestResult struct {
	Message persistence.Message
	Err     error
}

// ErrUnknownParty is an IngestResult error for a from or to that names no party.
var ErrUnknownParty = errors.New("unknown party")

var (
	mu       sync.RWMutex
	modules  []Module
	registry = map[persistence.PluginType]Plugin{}
)

// Register adds a module; it panics on a plugin type registered twice, which is a
// programming error caught at start.
func Register(m Module) {
	mu.Lock()
	defer mu.Unlock()
	for _, p := range m.Plugins {
		if _, dup := registry[p.Type]; dup {
			panic(fmt.Sprintf("module %s: plugin type %s registered twice", m.Name, p.Type))
		}
		if (p.Role == RoleSource) == (p.NewSource == nil) || (p.Role == RoleTarget) == (p.NewTarget == nil) {
			panic(fmt.Sprintf("module %s: plugin type %s has a constructor that does not match its role", m.Name, p.Type))
		}
		registry[p.Type] = p
	}
	modules = append(modules, m)
}

// Lookup finds a registered plugin type.
func Lookup(t persistence.PluginType) (Plugin, bool) {
	mu.RLock()
	defer mu.RUnlock()
	p, ok := registry[t]
	return p, ok
}

// Modules lists the registered modules in registration order.
func Modules() []Module {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(modules)
}

// Plugins lists registered plugin types in a stable order.
func Plugins() []Plugin {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Plugin, 0, len(registry))
	for _, p := range registry {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Plugin) int {
		switch {
		case a.Type < b.Type:
			return -1
		case a.Type > b.Type:
			return 1
		}
		return 0
	})
	return out
}
