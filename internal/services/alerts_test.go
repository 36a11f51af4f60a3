package services_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"wharf/internal/alert"
	"wharf/internal/alert/alerttest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/services"

	_ "wharf/internal/notification"
)

// An instance that fails to start raises plugin_failed once, not again while it stays
// failed; a notifier that fails raises nothing about itself.
func TestFailedInstanceRaisesAlert(t *testing.T) {
	s := dbtest.SQLite(t)
	ctx := context.Background()
	for _, rec := range []persistence.PluginConfig{
		{Name: "broken", Type: persistence.PluginFileWriter, Enabled: true, Config: json.RawMessage(`{}`)},
		{Name: "loud", Type: persistence.PluginNotificationWebhook, Enabled: true, Config: json.RawMessage(`{}`)},
	} {
		if _, err := s.CreatePluginConfig(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	r := &alerttest.Recorder{}
	m := services.New(s, plainSealer{}, &targets{running: map[persistence.InstanceName]bool{}},
		module.Env{Logger: slog.New(slog.DiscardHandler), DataDir: t.TempDir(), Ingest: refuseAll{}, Alerts: r})
	for range 2 {
		if err := m.StartAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st := states(t, m)
	if st["broken"] != services.StateFailed || st["loud"] != services.StateFailed {
		t.Fatalf("states %v", st)
	}
	if as := r.Alerts(); len(as) != 1 || as[0].Code != alert.PluginFailed || as[0].Subject.ID != "broken" {
		t.Fatalf("raised %+v, want one plugin_failed for broken", as)
	}
}

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
