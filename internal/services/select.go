package services

import (
	"context"
	"fmt"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// StartSelected starts the enabled instances of typ, or only name when it is set: the
// share of a plugin process (`wharf serve plugin TYPE [NAME]`). A type no module
// provides, a name that is not an instance of the type, or nothing enabled to run stops
// the start, so a process never runs idle by mistake. An instance that fails to start is
// marked failed and logged, as in StartAll.
func (m *Manager) StartSelected(ctx context.Context, typ persistence.PluginType, name persistence.InstanceName) error {
	if _, ok := module.Lookup(typ); !ok {
		return fmt.Errorf("plugin type %q: no module provides it", typ)
	}
	recs, err := m.store.ListPluginConfigs(ctx, typ)
	if err != nil {
		return fmt.Errorf("list %s instances: %w", typ, err)
	}
	started := 0
	for _, rec := range recs {
		if name != "" && rec.Name != name {
			continue
		}
		if !rec.Enabled {
			if name != "" {
				return fmt.Errorf("plugin instance %s is disabled: enable it first", name)
			}
			continue
		}
		started++
		if err := m.startRecord(ctx, rec); err != nil {
			m.log.Error("plugin instance failed to start", "instance", string(rec.Name), "type", string(rec.Type), "err", err)
		}
	}
	switch {
	case started > 0:
		return nil
	case name != "":
		return fmt.Errorf("plugin instance %s: no %s instance of that name", name, typ)
	default:
		return fmt.Errorf("plugin type %s: no enabled instance to run", typ)
	}
}
