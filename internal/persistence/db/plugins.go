package db

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

func checkPlugin(c *persistence.PluginConfig) error {
	if err := check("name", c.Name, persistence.ParseInstanceName); err != nil {
		return err
	}
	if err := check("type", c.Type, persistence.ParsePluginType); err != nil {
		return err
	}
	if len(bytes.TrimSpace(c.Config)) == 0 {
		c.Config = json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(c.Config, &obj); err != nil || obj == nil {
		return fieldMsg("config", "must be a JSON object")
	}
	if c.Secrets == nil {
		c.Secrets = []byte{}
	}
	return nil
}

// CreatePluginConfig inserts a plugin instance; a name taken by any type is ErrConflict.
func (s *Store) CreatePluginConfig(ctx context.Context, c persistence.PluginConfig) (persistence.PluginConfig, error) {
	if err := checkPlugin(&c); err != nil {
		return persistence.PluginConfig{}, fmt.Errorf("create plugin instance: %w", err)
	}
	var out persistence.PluginConfig
	err := s.write(ctx, func(t *txn) (err error) {
		if out, err = t.insertPlugin(ctx, c); err != nil {
			return err
		}
		return t.auditPlugin(ctx, "create", nil, &out)
	})
	return out, err
}

func (t *txn) insertPlugin(ctx context.Context, c persistence.PluginConfig) (persistence.PluginConfig, error) {
	var taken persistence.PluginType
	err := t.queryRow(ctx, `SELECT type FROM plugin_configs WHERE name = ?`, c.Name).Scan(&taken)
	switch {
	case err == nil:
		return persistence.PluginConfig{}, fmt.Errorf("plugin instance %q already exists (type %s): %w", c.Name, taken, persistence.ErrConflict)
	case !errors.Is(err, sql.ErrNoRows):
		return persistence.PluginConfig{}, fmt.Errorf("create plugin instance %q: %w", c.Name, err)
	}
	now := t.s.tv(t.now)
	out, err := scanPlugin(t.queryRow(ctx, `INSERT INTO plugin_configs (name, type, enabled, config, secrets, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING `+pluginCols, c.Name, c.Type, c.Enabled, string(c.Config), c.Secrets, now, now))
	if isUniqueViolation(err) {
		return out, fmt.Errorf("plugin instance %q already exists: %w", c.Name, persistence.ErrConflict)
	}
	if err != nil {
		return out, fmt.Errorf("create plugin instance %q: %w", c.Name, err)
	}
	return out, nil
}

// GetPluginConfig returns one plugin instance.
func (s *Store) GetPluginConfig(ctx context.Context, name persistence.InstanceName) (persistence.PluginConfig, error) {
	var out persistence.PluginConfig
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanPlugin(t.queryRow(ctx, `SELECT `+pluginCols+` FROM plugin_configs WHERE name = ?`, string(name)))
		return notFound(err, "plugin instance %q", name)
	})
	return out, err
}

// ListPluginConfigs lists every instance, or those of typ, by name.
func (s *Store) ListPluginConfigs(ctx context.Context, typ persistence.PluginType) ([]persistence.PluginConfig, error) {
	var out []persistence.PluginConfig
	err := s.read(ctx, func(t *txn) error {
		q, args := `SELECT `+pluginCols+` FROM plugin_configs ORDER BY name`, []any{}
		if typ != "" {
			q, args = `SELECT `+pluginCols+` FROM plugin_configs WHERE type = ? ORDER BY name`, []any{string(typ)}
		}
		rows, err := t.query(ctx, q, args...)
		out, err = collect(rows, err, scanPlugin)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list plugin instances: %w", err)
	}
	return out, nil
}

// UpdatePluginConfig replaces an instance's enabled flag, config and secrets. The type of
// an instance never changes: a different type is ErrConflict.
func (s *Store) UpdatePluginConfig(ctx context.Context, c persistence.PluginConfig) (persistence.PluginConfig, error) {
	if err := checkPlugin(&c); err != nil {
		return persistence.PluginConfig{}, fmt.Errorf("update plugin instance: %w", err)
	}
	var out persistence.PluginConfig
	err := s.write(ctx, func(t *txn) error {
		before, err := scanPlugin(t.queryRow(ctx, `SELECT `+pluginCols+` FROM plugin_configs WHERE name = ?`+t.s.lockRows, c.Name))
		if err != nil {
			return notFound(err, "plugin instance %q", c.Name)
		}
		if typ := before.Type; typ != c.Type {
			return fmt.Errorf("plugin instance %q is of type %s, not %s: %w", c.Name, typ, c.Type, persistence.ErrConflict)
		}
		out, err = scanPlugin(t.queryRow(ctx, `UPDATE plugin_configs SET enabled = ?, config = ?, secrets = ?, updated_at = ?
			WHERE name = ? RETURNING `+pluginCols, c.Enabled, string(c.Config), c.Secrets, t.s.tv(t.now), c.Name))
		if err != nil {
			return fmt.Errorf("update plugin instance %q: %w", c.Name, err)
		}
		return t.auditPlugin(ctx, "update", &before, &out)
	})
	return out, err
}

// DeletePluginConfig deletes an instance no route names.
func (s *Store) DeletePluginConfig(ctx context.Context, name persistence.InstanceName) error {
	return s.write(ctx, func(t *txn) error {
		before, err := scanPlugin(t.queryRow(ctx, `SELECT `+pluginCols+` FROM plugin_configs WHERE name = ?`+t.s.lockRows, string(name)))
		if err != nil {
			return notFound(err, "plugin instance %q", name)
		}
		var routeID int64
		err = t.queryRow(ctx, `SELECT id FROM routes WHERE source = ? OR target = ? ORDER BY id LIMIT 1`,
			string(name), string(name)).Scan(&routeID)
		switch {
		case err == nil:
			return fmt.Errorf("plugin instance %q is used by route %d: %w", name, routeID, persistence.ErrInUse)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("delete plugin instance %q: %w", name, err)
		}
		_, err = t.exec(ctx, `DELETE FROM plugin_configs WHERE name = ?`, string(name))
		if isForeignKeyViolation(err) {
			return fmt.Errorf("plugin instance %q is used by a route: %w", name, persistence.ErrInUse)
		}
		if err != nil {
			return fmt.Errorf("delete plugin instance %q: %w", name, err)
		}
		return t.auditPlugin(ctx, "delete", &before, nil)
	})
}

// auditPlugin records a plugin instance's change: its type, enabled flag and config by
// field, and its sealed secrets only as changed.
func (t *txn) auditPlugin(ctx context.Context, action string, before, after *persistence.PluginConfig) error {
	t.pluginChanged = true
	type view struct {
		Type    persistence.PluginType `json:"type"`
		Enabled bool                   `json:"enabled"`
		Config  json.RawMessage        `json:"config"`
	}
	var b, a any
	var bs, as []byte
	name := ""
	if before != nil {
		b, bs, name = view{before.Type, before.Enabled, before.Config}, before.Secrets, string(before.Name)
	}
	if after != nil {
		a, as, name = view{after.Type, after.Enabled, after.Config}, after.Secrets, string(after.Name)
	}
	changes, err := audit.Diff(b, a)
	if err != nil {
		return fmt.Errorf("audit %s plugin instance %q: %w", action, name, err)
	}
	if !bytes.Equal(bs, as) && len(bs)+len(as) > 0 {
		changes = append(changes, audit.SecretChange("secrets"))
	}
	return t.audit(ctx, action, "plugin_instance", name, name, changes)
}
