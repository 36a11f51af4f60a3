package services_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/services"

	_ "wharf/internal/protocol/file"
)

// plainSealer keeps values as they are; the sealing itself is internal/secret's concern.
type plainSealer struct{}

func (plainSealer) Seal(p []byte) ([]byte, error) { return p, nil }
func (plainSealer) Open(p []byte) ([]byte, error) { return p, nil }

// targets records what the manager hands the delivery engine.
type targets struct {
	running map[persistence.InstanceName]bool
}

func (t *targets) AddTarget(name persistence.InstanceName, _ delivery.Deliverer, _ delivery.TargetOptions) error {
	t.running[name] = true
	return nil
}

func (t *targets) RemoveTarget(_ context.Context, name persistence.InstanceName) error {
	delete(t.running, name)
	return nil
}

// refuseAll is an ingester that takes nothing; these tests only start and stop sources.
type refuseAll struct{}

func (refuseAll) Ingest(_ context.Context, items []module.Incoming) ([]module.IngestResult, error) {
	out := make([]module.IngestResult, len(items))
	for i := range out {
		out[i].Err = module.ErrUnknownParty
	}
	return out, nil
}

func create(t *testing.T, s *db.Store, typ persistence.PluginType, body map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	in, err := module.Decode(typ, raw, nil, plainSealer{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := module.Encode(in, plainSealer{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePluginConfig(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

func states(t *testing.T, m *services.Manager) map[persistence.InstanceName]services.State {
	t.Helper()
	list, err := m.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[persistence.InstanceName]services.State{}
	for _, st := range list {
		out[st.Name] = st.State
		if st.Error != "" {
			t.Logf("%s: %s", st.Name, st.Error)
		}
	}
	return out
}

func TestManagerLifecycle(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		dir := t.TempDir()
		create(t, s, persistence.PluginFileWriter, map[string]any{"name": "writer", "directory": dir})
		create(t, s, persistence.PluginFilePoller, map[string]any{"name": "poller", "directory": dir + "/out"})
		create(t, s, persistence.PluginFileWriter, map[string]any{"name": "off", "directory": dir, "enabled": false})
		tg := &targets{running: map[persistence.InstanceName]bool{}}
		m := services.New(s, plainSealer{}, tg, module.Env{Logger: slog.New(slog.DiscardHandler), DataDir: dir, Ingest: refuseAll{}})
		if err := m.StartAll(ctx); err != nil {
			t.Fatal(err)
		}
		want := map[persistence.InstanceName]services.State{"writer": services.StateRunning, "poller": services.StateRunning, "off": services.StateDisabled}
		for name, st := range states(t, m) {
			if want[name] != st {
				t.Errorf("after StartAll %s is %s, want %s", name, st, want[name])
			}
		}
		if !tg.running["writer"] {
			t.Error("the writer has no worker in the engine")
		}
		if err := m.Stop(ctx, "writer"); err != nil {
			t.Fatal(err)
		}
		if st := states(t, m)["writer"]; st != services.StateStopped || tg.running["writer"] {
			t.Errorf("after Stop the writer is %s (worker %v)", st, tg.running["writer"])
		}
		if err := m.Restart(ctx, "writer"); err != nil {
			t.Fatal(err)
		}
		if st := states(t, m)["writer"]; st != services.StateRunning || !tg.running["writer"] {
			t.Errorf("after Restart the writer is %s (worker %v)", st, tg.running["writer"])
		}
		if err := m.Start(ctx, "nobody"); err == nil {
			t.Error("starting an unknown instance succeeded")
		}
		if err := m.StopRole(ctx, module.RoleSource); err != nil {
			t.Fatal(err)
		}
		if st := states(t, m)["poller"]; st != services.StateStopped {
			t.Errorf("after stopping the sources the poller is %s", st)
		}
	})
}
