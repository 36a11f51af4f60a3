package services_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/services"
)

// While the database or the bus is out of reach, running instances read degraded with
// the reason; the list comes from memory when the database does not answer.
func TestRunningInstancesReadDegradedDuringAnOutage(t *testing.T) {
	s := dbtest.SQLite(t)
	ctx := context.Background()
	dir := t.TempDir()
	create(t, s, persistence.PluginFileWriter, map[string]any{"name": "writer", "directory": dir})
	create(t, s, persistence.PluginFileWriter, map[string]any{"name": "off", "directory": dir, "enabled": false})
	store := &switchStore{Store: s}
	m := services.New(store, plainSealer{}, &targets{running: map[persistence.InstanceName]bool{}},
		module.Env{Logger: slog.New(slog.DiscardHandler), DataDir: dir, Ingest: refuseAll{}})
	if err := m.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	var down []string
	m.SetHealth(func() []string { return down })
	for _, tc := range []struct {
		name        string
		down        []string
		unreachable bool
		writer      services.State
		reason      string
	}{
		{"healthy", nil, false, services.StateRunning, ""},
		{"bus down", []string{"bus"}, false, services.StateDegraded, "bus unreachable"},
		{"database down", []string{"database"}, true, services.StateDegraded, "database unreachable"},
		{"database down, not noticed yet", nil, true, services.StateDegraded, "database unreachable"},
		{"recovered", nil, false, services.StateRunning, ""},
	} {
		down, store.down = tc.down, tc.unreachable
		list, err := m.List(ctx)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := map[persistence.InstanceName]services.Status{}
		for _, st := range list {
			got[st.Name] = st
		}
		if w := got["writer"]; w.State != tc.writer || w.Error != tc.reason {
			t.Errorf("%s: writer %s %q, want %s %q", tc.name, w.State, w.Error, tc.writer, tc.reason)
		}
		if o := got["off"]; o.State != services.StateDisabled {
			t.Errorf("%s: the disabled instance reads %s", tc.name, o.State)
		}
	}
}

// switchStore fails ListPluginConfigs as an unreachable database does while down is set.
type switchStore struct {
	services.Store
	down bool
}

func (s *switchStore) ListPluginConfigs(ctx context.Context, typ persistence.PluginType) ([]persistence.PluginConfig, error) {
	if s.down {
		return nil, errors.Join(persistence.ErrUnavailable, errors.New("connection refused"))
	}
	return s.Store.ListPluginConfigs(ctx, typ)
}
