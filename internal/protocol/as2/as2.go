// Package as2 is the AS2 module (RFC 4130): it registers the as2-receiver and as2-sender
// plugin types, the module's tables, its REST routes (profiles, connection check, test
// message) and its panel of a message's detail. The work is done by its sub-packages:
// profile (trading profiles), receiver, sender, mime and cms.
package as2

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
	"wharf/internal/protocol/as2/receiver"
	"wharf/internal/protocol/as2/sender"
)

// ModuleName keys the module's runtime and its message panel.
const ModuleName = "as2"

//go:embed schema
var schemaFS embed.FS

//go:embed openapi.yaml
var openAPI []byte

func init() {
	schema, err := fs.Sub(schemaFS, "schema")
	if err != nil {
		panic(err)
	}
	module.Register(module.Module{
		Name: ModuleName,
		Plugins: []module.Plugin{
			{
				Type:      persistence.PluginAS2Receiver,
				Role:      module.RoleSource,
				NewConfig: receiver.NewConfig,
				NewSource: newReceiver,
			},
			{
				Type:      persistence.PluginAS2Sender,
				Role:      module.RoleTarget,
				NewConfig: func() module.Config { return sender.NewConfig() },
				NewTarget: newSender,
				// The sender reads the redeliver's resend mode (sender.plan).
				MessageIdentity: true,
			},
		},
		Schema:  schema,
		OpenAPI: openAPI,
		Setup:   setup,
	})
}

// Runtime is what the module's instances and routes share in one process.
type Runtime struct {
	core     module.Core
	profiles *profile.Store
	dir      *profile.Dir
	intake   *sender.Intake
}

var (
	_ module.APIProvider     = (*Runtime)(nil)
	_ module.MessagePanels   = (*Runtime)(nil)
	_ module.PartyReferences = (*Runtime)(nil)
)

func setup(_ context.Context, core module.Core) (any, error) {
	rt := &Runtime{core: core}
	rt.profiles = profile.NewStore(core.DB, core.Store)
	rt.dir = profile.NewDirectory(rt.profiles, core.Certs, core.Store)
	intake, err := sender.NewIntake(rt.senderDeps())
	if err != nil {
		return nil, fmt.Errorf("as2: %w", err)
	}
	rt.intake = intake
	return rt, nil
}

func runtimeOf(env module.Env) (*Runtime, error) {
	rt, ok := env.Runtime(ModuleName).(*Runtime)
	if !ok {
		return nil, fmt.Errorf("the %s module was not set up", ModuleName)
	}
	return rt, nil
}

func (rt *Runtime) senderDeps() sender.Deps {
	return sender.Deps{
		Directory:   rt.dir,
		DB:          rt.core.DB,
		Blobs:       rt.core.Blobs,
		Store:       rt.core.Store,
		Logger:      rt.core.Logger.With("component", "as2-sender"),
		BaseURL:     rt.core.BaseURL,
		AsyncMDNURL: rt.asyncMDNURL,
		Alerts:      rt.core.Alerts,
		Product:     rt.core.Product,
		Telemetry:   rt.core.Telemetry,
		TempDir:     filepath.Join(rt.core.DataDir, "tmp"),
	}
}

// asyncMDNURL is where partners send async MDNs when a remote profile names no URL: the
// MDN path of the first enabled as2-receiver, at its bind address. An address that only
// partners on this host can reach is refused (empty), so a profile must name its URL
// once the receiver listens behind a public name.
func (rt *Runtime) asyncMDNURL(string) string {
	c, err := rt.receiverConfig(context.Background())
	if err != nil {
		return ""
	}
	// The last listener is the HTTPS one when there are two.
	ls := c.Listeners()
	l := ls[len(ls)-1]
	return l.Scheme() + "://" + l.Addr + c.MDNPath
}

// errNoReceiver is receiverConfig's answer when no as2-receiver is enabled.
var errNoReceiver = errors.New("no as2-receiver instance is enabled, so partners have nowhere to send")

// receiverConfig is the config of the first enabled as2-receiver instance.
func (rt *Runtime) receiverConfig(ctx context.Context) (*receiver.Config, error) {
	cfgs, err := rt.core.Store.ListPluginConfigs(ctx, persistence.PluginAS2Receiver)
	if err != nil {
		return nil, fmt.Errorf("list as2-receiver instances: %w", err)
	}
	for _, rec := range cfgs {
		if !rec.Enabled {
			continue
		}
		in, err := module.Load(rec, rt.core.Sealer)
		if err != nil {
			continue
		}
		if c, ok := in.Config.(*receiver.Config); ok {
			return c, nil
		}
	}
	return nil, errNoReceiver
}

func newReceiver(env module.Env, name persistence.InstanceName, cfg module.Config) (module.Service, error) {
	rt, err := runtimeOf(env)
	if err != nil {
		return nil, err
	}
	c, ok := cfg.(*receiver.Config)
	if !ok {
		return nil, fmt.Errorf("as2-receiver %s: unexpected config %T", name, cfg)
	}
	return receiver.New(receiver.Deps{
		Directory: rt.dir,
		DB:        rt.core.DB,
		Ingest:    env.Ingest,
		Blobs:     rt.core.Blobs,
		Store:     rt.core.Store,
		Certs:     rt.core.Certs,
		Logger:    env.Logger,
		MDNIntake: rt.intake,
		MDNFaults: []error{sender.ErrInvalidMDN},
		BaseURL:   rt.core.BaseURL,
		TempDir:   filepath.Join(rt.core.DataDir, "tmp"),
		Alerts:    rt.core.Alerts,
		Metrics:   inboundMetrics(rt.core.Inbound),
		Product:   rt.core.Product,
		Telemetry: rt.core.Telemetry,
	}, name, c)
}

func newSender(env module.Env, name persistence.InstanceName, cfg module.Config) (delivery.Deliverer, error) {
	rt, err := runtimeOf(env)
	if err != nil {
		return nil, err
	}
	c, ok := cfg.(*sender.Config)
	if !ok {
		return nil, fmt.Errorf("as2-sender %s: unexpected config %T", name, cfg)
	}
	deps := rt.senderDeps()
	deps.Logger = env.Logger
	return sender.New(deps, name, c)
}

// APIRoutes are the profile routes and the operator tools.
func (rt *Runtime) APIRoutes() []module.APIRoute {
	routes := append(rt.profiles.Routes(), rt.profiles.OnboardingRoutes()...)
	routes = append(routes, rt.partnerProfileRoute())
	return append(routes, rt.toolRoutes()...)
}

// Panel is the AS2 part of a message's detail: what was received (inbound), refused
// (inbound, a message kept as a record of its refusal) or sent (outbound, one entry per
// attempt with a distinct Message-ID).
type Panel struct {
	Direction string                  `json:"direction"` // inbound or outbound
	Inbound   *receiver.InboundRecord `json:"inbound,omitempty"`
	Refusal   *receiver.RefusalRecord `json:"refusal,omitempty"`
	Outbound  []sender.OutboundRecord `json:"outbound,omitempty"`
}

// MessagePanel finds the message's AS2 records.
func (rt *Runtime) MessagePanel(ctx context.Context, messageID int64) (any, bool, error) {
	in, err := receiver.FindInbound(ctx, rt.core.DB, messageID)
	switch {
	case err == nil:
		return Panel{Direction: "inbound", Inbound: &in}, true, nil
	case !isNotFound(err):
		return nil, false, err
	}
	ref, err := receiver.FindRefusal(ctx, rt.core.DB, messageID)
	switch {
	case err == nil:
		return Panel{Direction: "inbound", Refusal: &ref}, true, nil
	case !isNotFound(err):
		return nil, false, err
	}
	out, err := sender.FindOutbound(ctx, rt.core.DB, messageID)
	if err != nil && !isNotFound(err) {
		return nil, false, err
	}
	if len(out) == 0 {
		return nil, false, nil
	}
	return Panel{Direction: "outbound", Outbound: out}, true, nil
}

// PartyReferences names the profile that names the party, so the party is not deleted
// under it.
func (rt *Runtime) PartyReferences(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) ([]string, error) {
	var err error
	var what string
	switch kind {
	case persistence.PartyOrganization:
		_, err = rt.profiles.GetLocal(ctx, name)
		what = "the AS2 local profile of " + string(name)
	case persistence.PartyPartner:
		_, err = rt.profiles.GetRemote(ctx, name)
		what = "the AS2 remote profile of " + string(name)
	default:
		return nil, nil
	}
	switch {
	case err == nil:
		return []string{what}, nil
	case isNotFound(err):
		return nil, nil
	default:
		return nil, err
	}
}

// inboundMetrics is the core's counter of inbound requests as the receiver takes it: nil
// stays nil (an interface holding a nil module.InboundMetrics would not be).
func inboundMetrics(m module.InboundMetrics) receiver.Metrics {
	if m == nil {
		return nil
	}
	return m
}
