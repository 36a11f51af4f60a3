package services_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"wharf/internal/alert"
	"wharf/internal/alert/alerttest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/services"
)

// A failed instance that runs again, after its config is fixed, resolves its
// plugin_failed alert; starting it again while it runs changes nothing.
func TestInstanceRunningAgainResolvesItsAlert(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		rec, err := s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: "broken", Type: persistence.PluginFileWriter,
			Enabled: true, Config: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		r := &alerttest.Recorder{}
		m := services.New(s, plainSealer{}, &targets{running: map[persistence.InstanceName]bool{}},
			module.Env{Logger: slog.New(slog.DiscardHandler), DataDir: t.TempDir(), Ingest: refuseAll{}, Alerts: r})
		if err := m.StartAll(ctx); err != nil {
			t.Fatal(err)
		}
		rec.Config = json.RawMessage(`{"directory": ` + jsonString(t.TempDir()) + `}`)
		if _, err := s.UpdatePluginConfig(ctx, rec); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := m.Start(ctx, "broken"); err != nil {
				t.Fatal(err)
			}
		}
		as := r.Alerts()
		if len(as) != 2 || as[0].Code != alert.PluginFailed || as[0].Resolves ||
			as[1].Code != alert.PluginFailed || !as[1].Resolves || as[1].Subject.ID != "broken" {
			t.Fatalf("raised %+v, want plugin_failed for broken, then its resolution", as)
		}
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

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
