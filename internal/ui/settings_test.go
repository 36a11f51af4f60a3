package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"wharf/internal/api"
	"wharf/internal/persistence"
	"wharf/internal/settings"
)

// settingsOps counts the settings changes the REST API reports; nothing else is used.
type settingsOps struct {
	api.Ops
	changes atomic.Int32
}

func (o *settingsOps) SettingsChanged(context.Context) { o.changes.Add(1) }

func TestSettingsEdit(t *testing.T) {
	var changes atomic.Int32
	ab := setupAccounts(t, func(d *Deps) { d.SettingsChanged = func(context.Context) { changes.Add(1) } })
	ctx := context.Background()

	page := ab.get(t, "/ui/settings", http.StatusOK)
	for _, c := range settings.Catalogue() {
		if !strings.Contains(page, `name="`+c.Key+`"`) || !strings.Contains(page, `value="`+c.Default+`"`) {
			t.Errorf("settings form lacks %s with its default", c.Key)
		}
	}

	r := ab.post(t, "/ui/settings", url.Values{settings.MaxDispatches: {"0"}, settings.DisplayTimezone: {"Mars/Olympus"},
		settings.SweepInterval: {"2s"}})
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="max_dispatches-error"`) ||
		!strings.Contains(r.body, `id="display_timezone-error"`) || !strings.Contains(r.body, `value="Mars/Olympus"`) ||
		!strings.Contains(r.body, `value="2s"`) {
		t.Fatalf("refused save = %d\n%s", r.status, r.body)
	}
	if stored, _ := ab.store.ListSettings(ctx); stored[settings.SweepInterval] != "" {
		t.Error("a refused save wrote a setting")
	}
	if changes.Load() != 0 {
		t.Error("a refused save reported a change")
	}

	wantRedirect(t, ab.post(t, "/ui/settings", url.Values{settings.SweepInterval: {"2s"}, settings.MaxDispatches: {"5"}}), "/ui/settings")
	stored, err := ab.store.ListSettings(ctx)
	if err != nil || stored[settings.SweepInterval] != "2s" {
		t.Fatalf("stored settings = %v, %v", stored, err)
	}
	if _, written := stored[settings.MaxDispatches]; written {
		t.Error("an unchanged setting was written")
	}
	if changes.Load() != 1 {
		t.Errorf("SettingsChanged calls = %d, want 1", changes.Load())
	}
	if body := ab.get(t, "/ui/settings", http.StatusOK); !strings.Contains(body, "Settings saved") || !strings.Contains(body, `value="2s"`) {
		t.Errorf("page after save:\n%s", body)
	}
}

// TestSettingsSameRulesAsREST sends the same values to the UI and to the REST API and
// requires the same outcome: both refuse the same keys, or both store the values.
func TestSettingsSameRulesAsREST(t *testing.T) {
	ab := setupAccounts(t, nil)
	rest := httptest.NewServer(api.New(api.Deps{Store: ab.store, Ops: &settingsOps{}}).Handler())
	t.Cleanup(rest.Close)
	token := "wharf_" + strings.Repeat("t", 43)
	if _, err := ab.store.CreateAPIToken(context.Background(), "test", api.HashToken(token)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		key, value string
	}{
		{settings.MaxUploadMiB, "0"},
		{settings.MaxUploadMiB, "20"},
		{settings.LeaseDuration, "5s"},
		{settings.LeaseDuration, "90s"},
		{settings.DisplayTimezone, "Local"},
		{settings.DisplayTimezone, "Europe/Berlin"},
	} {
		ui := ab.post(t, "/ui/settings", url.Values{tt.key: {tt.value}})
		req, _ := http.NewRequest(http.MethodPut, rest.URL+"/api/v1/settings", strings.NewReader(`{"`+tt.key+`":"`+tt.value+`"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		uiOK, restOK := ui.status == http.StatusSeeOther, res.StatusCode == http.StatusOK
		if uiOK != restOK {
			t.Errorf("%s=%q: UI %d, REST %d; want the same outcome", tt.key, tt.value, ui.status, res.StatusCode)
		}
		if !uiOK && !strings.Contains(ui.body, `id="`+tt.key+`-error"`) {
			t.Errorf("%s=%q: the UI refusal does not name the field", tt.key, tt.value)
		}
	}
}

func TestSettingsOperatorReads(t *testing.T) {
	ab := setupAccounts(t, nil)
	op, csrf, _ := ab.signedIn(t, "olga", persistence.RoleOperator)
	page := op.get(t, "/ui/settings")
	if page.status != http.StatusOK || strings.Contains(page.body, `action="/ui/settings"`) || !strings.Contains(page.body, settings.MaxUploadMiB) {
		t.Errorf("operator's settings page = %d\n%s", page.status, page.body)
	}
	if r := op.post(t, "/ui/settings", url.Values{"csrf_token": {csrf}, settings.MaxUploadMiB: {"5"}}); r.status != http.StatusForbidden {
		t.Errorf("operator save = %d, want 403", r.status)
	}
	if stored, _ := ab.store.ListSettings(context.Background()); stored[settings.MaxUploadMiB] != "" {
		t.Error("the operator's save was stored")
	}
}
