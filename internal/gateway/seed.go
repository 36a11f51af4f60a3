package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"wharf/internal/config"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/settings"
)

// defaultInstance is a plugin instance a new database starts with, when its module is
// part of this build.
type defaultInstance struct {
	name     persistence.InstanceName
	typ      persistence.PluginType
	config   map[string]any
	inbound  bool // inbound sources and targets face partners coming in
	outbound bool
}

// seedData is what a new database starts with: the organization local, the settings'
// defaults, the default instances of every module in this build, and routes from each
// inbound source to each inbound target and each outbound source to each outbound
// target, any party to any party.
func seedData(cfg config.Config, sealer module.Sealer) (persistence.SeedData, error) {
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return persistence.SeedData{}, fmt.Errorf("data directory: %w", err)
	}
	now := time.Now().UTC()
	data := persistence.SeedData{
		Organizations: []persistence.Party{{Kind: persistence.PartyOrganization, Name: "local", DisplayName: persistence.SeedOrganizationDisplayName, CreatedAt: now, UpdatedAt: now}},
		Settings:      settings.Defaults(),
	}
	defaults := []defaultInstance{
		{name: "as2_receiver_default", typ: persistence.PluginAS2Receiver, config: as2ReceiverAddr(cfg), inbound: true},
		{name: "as2_sender_default", typ: persistence.PluginAS2Sender, config: map[string]any{}, outbound: true},
		{name: "file_poller_default", typ: persistence.PluginFilePoller, config: map[string]any{"directory": filepath.Join(abs, "outbox"), "pattern": "{to}/{filename}"}, outbound: true},
		{name: "file_writer_default", typ: persistence.PluginFileWriter, config: map[string]any{"directory": filepath.Join(abs, "inbox"), "pattern": "{from}/{original_filename}"}, inbound: true},
	}
	type side struct{ sources, targets []persistence.InstanceName }
	var in, out side
	for _, d := range defaults {
		p, ok := module.Lookup(d.typ)
		if !ok {
			continue
		}
		body := map[string]any{"name": d.name, "enabled": true}
		for k, v := range d.config {
			body[k] = v
		}
		raw, err := json.Marshal(body)
		if err != nil {
			return persistence.SeedData{}, err
		}
		inst, err := module.Decode(d.typ, raw, nil, sealer)
		if err != nil {
			return persistence.SeedData{}, fmt.Errorf("default instance %s: %w", d.name, err)
		}
		rec, err := module.Encode(inst, sealer)
		if err != nil {
			return persistence.SeedData{}, fmt.Errorf("default instance %s: %w", d.name, err)
		}
		rec.CreatedAt, rec.UpdatedAt = now, now
		data.Plugins = append(data.Plugins, rec)
		s := &out
		if d.inbound {
			s = &in
		}
		if p.Role == module.RoleSource {
			s.sources = append(s.sources, d.name)
		} else {
			s.targets = append(s.targets, d.name)
		}
	}
	for _, s := range []side{in, out} {
		for _, src := range s.sources {
			for _, dst := range s.targets {
				data.Routes = append(data.Routes, persistence.Route{Source: src, From: persistence.AnyParty, To: persistence.AnyParty, Target: dst, CreatedAt: now})
			}
		}
	}
	return data, nil
}

// as2ReceiverAddr is the default AS2 receiver's bind address and port from --as2-addr,
// or nothing for the receiver's own defaults. Config.Validate has checked the address.
func as2ReceiverAddr(cfg config.Config) map[string]any {
	if cfg.AS2Addr == "" {
		return map[string]any{}
	}
	host, port, _ := net.SplitHostPort(cfg.AS2Addr)
	p, _ := strconv.Atoi(port)
	return map[string]any{"bind": host, "port": p}
}

// seed fills a new database once.
func seed(ctx context.Context, store persistence.Store, cfg config.Config, sealer module.Sealer) (bool, error) {
	data, err := seedData(cfg, sealer)
	if err != nil {
		return false, err
	}
	ok, err := store.Seed(ctx, data)
	if err != nil {
		return false, fmt.Errorf("seed database: %w", err)
	}
	return ok, nil
}
