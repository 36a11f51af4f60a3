package records

import (
	"context"
	"fmt"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// ManualSource is the source recorded on messages sent by hand without a source instance.
// No plugin instance may take this name.
const ManualSource persistence.InstanceName = "manual"

// SavePluginConfig decodes a plugin config object (name, enabled and the type's own
// fields) with module.Decode — the one rule set for plugin configs — and stores it. With
// name empty it creates the instance named in the body; otherwise it replaces the stored
// instance name of type typ (ErrNotFound if there is none of that type), and write-only
// fields the body leaves out keep their stored values.
func SavePluginConfig(ctx context.Context, st Store, s module.Sealer, typ persistence.PluginType, name persistence.InstanceName, body []byte) (persistence.PluginConfig, error) {
	var stored *persistence.PluginConfig
	if name != "" {
		rec, err := st.GetPluginConfig(ctx, name)
		if err != nil {
			return persistence.PluginConfig{}, err
		}
		if rec.Type != typ {
			return persistence.PluginConfig{}, fmt.Errorf("plugin config %s of type %s: %w", name, typ, persistence.ErrNotFound)
		}
		stored = &rec
	}
	in, err := module.Decode(typ, body, stored, s)
	if err != nil {
		return persistence.PluginConfig{}, err
	}
	if stored == nil && in.Name == ManualSource {
		return persistence.PluginConfig{}, fieldError("name", fmt.Sprintf("%q is reserved for messages sent by hand", ManualSource))
	}
	rec, err := module.Encode(in, s)
	if err != nil {
		return persistence.PluginConfig{}, err
	}
	if stored == nil {
		return st.CreatePluginConfig(ctx, rec)
	}
	rec.CreatedAt = stored.CreatedAt
	return st.UpdatePluginConfig(ctx, rec)
}
