package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"wharf/internal/api"
	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/records"

	// The plugin types these tests configure register themselves.
	_ "wharf/internal/protocol/file"
	_ "wharf/internal/protocol/httppost"
)

// restOps is what the REST API needs of the running system in these tests: nothing.
type restOps struct{}

func (restOps) Redispatch(context.Context, int64, string) ([]persistence.Delivery, error) {
	return nil, errors.New("not used")
}
func (restOps) Redeliver(context.Context, int64, persistence.ResendMode, string) (persistence.Delivery, error) {
	return persistence.Delivery{}, errors.New("not used")
}
func (restOps) ActOnDeliveries(context.Context, persistence.DeliveryAction, []int64, string) ([]persistence.DeliveryActionResult, error) {
	return nil, errors.New("not used")
}
func (restOps) ResubmitDeliveries(context.Context, []int64, string) ([]persistence.DeliveryActionResult, error) {
	return nil, errors.New("not used")
}
func (restOps) SkipDeliveries(context.Context, []int64, string) ([]persistence.DeliveryActionResult, error) {
	return nil, errors.New("not used")
}
func (restOps) RoutesChanged(context.Context)                                  {}
func (restOps) SettingsChanged(context.Context)                                {}
func (restOps) Services(context.Context) []api.ServiceStatus                   { return nil }
func (restOps) StartService(context.Context, persistence.InstanceName) error   { return nil }
func (restOps) StopService(context.Context, persistence.InstanceName) error    { return nil }
func (restOps) RestartService(context.Context, persistence.InstanceName) error { return nil }

// restSide is the REST API over a store of its own, sealing with the UI's secrets box, so
// the same submission can be made both ways and the stored records compared.
type restSide struct {
	store persistence.Store
	url   string
	token string
}

func newRESTSide(t *testing.T, cb *configBundle) *restSide {
	t.Helper()
	st := dbtest.SQLite(t)
	srv := httptest.NewServer(api.New(api.Deps{Store: st, Ops: restOps{}, Sealer: cb.box,
		Logger: slog.New(slog.NewTextHandler(tLogWriter{t}, nil))}).Handler())
	t.Cleanup(srv.Close)
	const token = "wharf_test-token-for-the-rest-side"
	if _, err := st.CreateAPIToken(context.Background(), "tester", api.HashToken(token)); err != nil {
		t.Fatal(err)
	}
	return &restSide{store: st, url: srv.URL, token: token}
}

// send makes a JSON request and returns the status and the decoded answer.
func (rs *restSide) send(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, rs.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+rs.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var out map[string]any
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, data)
		}
	}
	return res.StatusCode, out
}

// storedConfig is a stored instance with its write-only values opened, for comparing.
type storedConfig struct {
	Type    persistence.PluginType
	Enabled bool
	Config  map[string]any
	Secrets map[string]any
}

func readStored(t *testing.T, st persistence.Store, box Sealer, name persistence.InstanceName) (storedConfig, bool) {
	t.Helper()
	rec, err := st.GetPluginConfig(context.Background(), name)
	if errors.Is(err, persistence.ErrNotFound) {
		return storedConfig{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	out := storedConfig{Type: rec.Type, Enabled: rec.Enabled}
	if err := json.Unmarshal(rec.Config, &out.Config); err != nil {
		t.Fatal(err)
	}
	if len(rec.Secrets) > 0 {
		plain, err := box.Open(rec.Secrets)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(plain, &out.Secrets); err != nil {
			t.Fatal(err)
		}
	}
	return out, true
}

// TestPluginFormMatchesREST sends the same submission through the form and through the
// REST API and requires the same outcome: the same stored record, or a refusal naming the
// same fields.
func TestPluginFormMatchesREST(t *testing.T) {
	dir := t.TempDir()
	dirJSON, _ := json.Marshal(dir)
	d := string(dirJSON)
	const canary = "Bearer canary-secret-4711"
	// Both stores start with these instances.
	existing := []struct {
		typ  persistence.PluginType
		body string
	}{
		{persistence.PluginFileWriter, `{"name":"taken","directory":` + d + `}`},
		{persistence.PluginHTTPPoster, `{"name":"hooks","url":"https://example.com/in","secret_headers":{"Authorization":"` + canary + `"}}`},
	}
	tests := []struct {
		name   string
		typ    persistence.PluginType
		update persistence.InstanceName // empty: create
		form   url.Values
		rest   string
		// instance is what to compare when the submission is taken; errFields the fields
		// named when it is refused (status is the REST status then).
		instance  persistence.InstanceName
		check     func(t *testing.T, got storedConfig)
		status    int
		errFields []string
	}{
		{name: "valid writer", typ: persistence.PluginFileWriter,
			form: url.Values{"name": {"out"}, "enabled": {"true"}, "directory": {dir}, "on_collision": {"overwrite"},
				"retry.max_retries": {"3"}, "retry.base": {"10s"}, "retry.max_delay": {"1m"}, "file_mode": {"0600"}},
			rest:     `{"name":"out","enabled":true,"directory":` + d + `,"on_collision":"overwrite","retry":{"max_retries":3,"base":"10s","max_delay":"1m"},"file_mode":"0600"}`,
			instance: "out", check: func(t *testing.T, got storedConfig) {
				if got.Config["directory"] != dir || got.Config["on_collision"] != "overwrite" || !got.Enabled {
					t.Errorf("stored: %+v", got)
				}
			}},
		{name: "valid disabled poster with headers", typ: persistence.PluginHTTPPoster,
			form: url.Values{"name": {"post"}, "url": {"https://example.com/x?k=1"}, "headers": {"X-One: 1\nX-Two: two"},
				"secret_headers": {"Authorization: " + canary}, "timeout": {"5s"}},
			rest:     `{"name":"post","enabled":false,"url":"https://example.com/x?k=1","headers":{"X-One":"1","X-Two":"two"},"secret_headers":{"Authorization":"` + canary + `"},"timeout":"5s"}`,
			instance: "post"},
		{name: "invalid url", typ: persistence.PluginHTTPPoster,
			form:   url.Values{"name": {"post2"}, "enabled": {"true"}, "url": {"ftp://example.com/"}},
			rest:   `{"name":"post2","enabled":true,"url":"ftp://example.com/"}`,
			status: http.StatusBadRequest, errFields: []string{"url"}},
		{name: "integer that is not one", typ: persistence.PluginFilePoller,
			form:   url.Values{"name": {"in"}, "enabled": {"true"}, "directory": {dir}, "batch_size": {"many"}},
			rest:   `{"name":"in","enabled":true,"directory":` + d + `,"batch_size":"many"}`,
			status: http.StatusBadRequest, errFields: []string{"batch_size"}},
		{name: "invalid duration", typ: persistence.PluginFilePoller,
			form:   url.Values{"name": {"in"}, "enabled": {"true"}, "directory": {dir}, "interval": {"soon"}},
			rest:   `{"name":"in","enabled":true,"directory":` + d + `,"interval":"soon"}`,
			status: http.StatusBadRequest, errFields: []string{"interval"}},
		{name: "invalid nested field", typ: persistence.PluginFileWriter,
			form:   url.Values{"name": {"out2"}, "enabled": {"true"}, "directory": {dir}, "retry.max_retries": {"5000"}},
			rest:   `{"name":"out2","enabled":true,"directory":` + d + `,"retry":{"max_retries":5000}}`,
			status: http.StatusBadRequest, errFields: []string{"retry.max_retries"}},
		{name: "rules by class", typ: persistence.PluginHTTPPoster,
			form: url.Values{"name": {"rules"}, "enabled": {"true"}, "url": {"https://example.com/r"},
				"retry.rules.http_5xx.strategy": {"linear"}, "retry.rules.http_5xx.base": {"10s"}, "retry.rules.http_5xx.max_retries": {"8"},
				"retry.rules.http_throttled.never": {"true"}},
			rest:     `{"name":"rules","enabled":true,"url":"https://example.com/r","retry":{"rules":{"http_5xx":{"strategy":"linear","base":"10s","max_retries":8},"http_throttled":{"never":true}}}}`,
			instance: "rules", check: func(t *testing.T, got storedConfig) {
				rules, _ := got.Config["retry"].(map[string]any)["rules"].(map[string]any)
				if len(rules) != 2 || rules["http_throttled"] == nil || rules["http_5xx"].(map[string]any)["base"] != "10s" {
					t.Errorf("stored rules: %+v", got.Config["retry"])
				}
			}},
		{name: "invalid rule", typ: persistence.PluginFileWriter,
			form:   url.Values{"name": {"out4"}, "enabled": {"true"}, "directory": {dir}, "retry.rules.timeout.never": {"true"}, "retry.rules.timeout.base": {"1s"}},
			rest:   `{"name":"out4","enabled":true,"directory":` + d + `,"retry":{"rules":{"timeout":{"never":true,"base":"1s"}}}}`,
			status: http.StatusBadRequest, errFields: []string{"retry.rules.timeout.never"}},
		{name: "required field missing", typ: persistence.PluginFileWriter,
			form:   url.Values{"name": {"out3"}, "enabled": {"true"}},
			rest:   `{"name":"out3","enabled":true}`,
			status: http.StatusBadRequest, errFields: []string{"directory"}},
		{name: "invalid name", typ: persistence.PluginFileWriter,
			form:   url.Values{"name": {"Not A Name"}, "enabled": {"true"}, "directory": {dir}},
			rest:   `{"name":"Not A Name","enabled":true,"directory":` + d + `}`,
			status: http.StatusBadRequest, errFields: []string{"name"}},
		{name: "reserved name", typ: persistence.PluginFileWriter,
			form:   url.Values{"name": {"manual"}, "enabled": {"true"}, "directory": {dir}},
			rest:   `{"name":"manual","enabled":true,"directory":` + d + `}`,
			status: http.StatusBadRequest, errFields: []string{"name"}},
		{name: "duplicate name", typ: persistence.PluginFileWriter,
			form:   url.Values{"name": {"taken"}, "enabled": {"true"}, "directory": {dir}},
			rest:   `{"name":"taken","enabled":true,"directory":` + d + `}`,
			status: http.StatusConflict, errFields: []string{"name"}},
		{name: "write-only kept", typ: persistence.PluginHTTPPoster, update: "hooks",
			form:     url.Values{"enabled": {"true"}, "url": {"https://example.com/other"}, "secret_headers": {""}},
			rest:     `{"enabled":true,"url":"https://example.com/other"}`,
			instance: "hooks", check: func(t *testing.T, got storedConfig) {
				if got.Config["url"] != "https://example.com/other" || !reflect.DeepEqual(got.Secrets, map[string]any{"secret_headers": map[string]any{"Authorization": canary}}) {
					t.Errorf("after an update without the write-only field: %+v", got)
				}
			}},
		{name: "write-only replaced", typ: persistence.PluginHTTPPoster, update: "hooks",
			form:     url.Values{"enabled": {"true"}, "url": {"https://example.com/in"}, "secret_headers": {"X-Token: t2"}},
			rest:     `{"enabled":true,"url":"https://example.com/in","secret_headers":{"X-Token":"t2"}}`,
			instance: "hooks"},
		{name: "invalid update", typ: persistence.PluginHTTPPoster, update: "hooks",
			form:   url.Values{"enabled": {"true"}, "url": {"https://example.com/in"}, "timeout": {"3h"}},
			rest:   `{"enabled":true,"url":"https://example.com/in","timeout":"3h"}`,
			status: http.StatusBadRequest, errFields: []string{"timeout"}},
	}
	// One UI and one REST side take every submission in turn; a taken one changes both
	// stores alike, so they stay equal for the next.
	cb := setupConfigPages(t)
	rs := newRESTSide(t, cb)
	ctx := context.Background()
	for _, e := range existing {
		for _, st := range []persistence.Store{cb.store, rs.store} {
			if _, err := records.SavePluginConfig(ctx, st, cb.box, e.typ, "", []byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uiPath, restPath, method := "/ui/plugins/"+string(tt.typ), "/api/v1/plugins/configs/"+string(tt.typ), http.MethodPost
			if tt.update != "" {
				uiPath, restPath, method = uiPath+"/"+string(tt.update), restPath+"/"+string(tt.update), http.MethodPut
			}
			restStatus, restBody := rs.send(t, method, restPath, tt.rest)
			ui := cb.post(t, uiPath, tt.form)

			if tt.errFields == nil {
				if restStatus/100 != 2 {
					t.Fatalf("REST = %d %v", restStatus, restBody)
				}
				wantRedirect(t, ui, "/ui/plugins/"+string(tt.typ)+"/"+string(tt.instance))
				viaUI, _ := readStored(t, cb.store, cb.box, tt.instance)
				viaREST, _ := readStored(t, rs.store, cb.box, tt.instance)
				if !reflect.DeepEqual(viaUI, viaREST) {
					t.Errorf("stored through the form:\n%+v\nthrough REST:\n%+v", viaUI, viaREST)
				}
				if tt.check != nil {
					tt.check(t, viaUI)
				}
				return
			}
			if restStatus != tt.status {
				t.Fatalf("REST = %d, want %d: %v", restStatus, tt.status, restBody)
			}
			restFields := []string{}
			if e, ok := restBody["error"].(map[string]any); ok {
				if details, ok := e["details"].(map[string]any); ok {
					for k := range details {
						restFields = append(restFields, k)
					}
				}
				if tt.status == http.StatusConflict && e["code"] == "NAME_TAKEN" {
					restFields = append(restFields, "name")
				}
			}
			slices.Sort(restFields)
			uiStatus := http.StatusUnprocessableEntity
			if tt.status == http.StatusConflict {
				uiStatus = http.StatusConflict
			}
			if ui.status != uiStatus {
				t.Fatalf("form = %d, want %d\n%s", ui.status, uiStatus, ui.body)
			}
			uiFields := formErrorFields(ui.body)
			slices.Sort(uiFields)
			if !slices.Equal(restFields, tt.errFields) || !slices.Equal(uiFields, tt.errFields) {
				t.Errorf("refused fields: REST %v, form %v, want %v\n%s", restFields, uiFields, tt.errFields, ui.body)
			}
			// The refused form keeps what was typed, but never a write-only value.
			for k, v := range tt.form {
				if k == "secret_headers" || k == "enabled" || v[0] == "" {
					continue
				}
				if !strings.Contains(ui.body, `value="`+v[0]+`"`) && !strings.Contains(ui.body, ">"+v[0]+"<") {
					t.Errorf("the refused form lost %s=%q", k, v[0])
				}
			}
			for _, body := range cb.c.seen {
				if strings.Contains(body, "canary-secret") {
					t.Fatal("a page shows a write-only value")
				}
			}
		})
	}
}

func TestPluginPagesCreateEditDelete(t *testing.T) {
	cb := setupConfigPages(t)
	cb.seedRouting(t)
	ctx := context.Background()
	if _, err := records.CreateRoute(ctx, cb.store, records.RouteInput{Source: "outbox", From: "local", To: "acme", Target: "inbox"}); err != nil {
		t.Fatal(err)
	}

	types := cb.get(t, "/ui/plugins", http.StatusOK)
	for _, want := range []string{`href="/ui/plugins/file-writer"`, `href="/ui/plugins/file-poller"`, `href="/ui/plugins/http-poster"`} {
		if !strings.Contains(types, want) {
			t.Errorf("types page lacks %q\n%s", want, types)
		}
	}
	if body := cb.get(t, "/ui/plugins/file-writer", http.StatusOK); !strings.Contains(body, `href="/ui/plugins/file-writer/inbox"`) ||
		!strings.Contains(body, `href="/ui/plugins/file-writer/archive"`) || strings.Contains(body, "outbox") {
		t.Errorf("type page:\n%s", body)
	}
	if body := cb.get(t, "/ui/plugins/http-poster", http.StatusOK); !strings.Contains(body, "No http-poster instance yet.") {
		t.Errorf("empty type page:\n%s", body)
	}

	// The new form is built from the type's description, defaults filled in.
	form := cb.get(t, "/ui/plugins/http-poster/new", http.StatusOK)
	for _, want := range []string{`name="url"`, `name="timeout"`, `value="30s"`, `name="retry.max_retries"`,
		`<textarea id="cfg-secret_headers" name="secret_headers"`, `<textarea id="cfg-headers" name="headers"`,
		`id="enabled" name="enabled" type="checkbox" value="true" checked`, "Write-only"} {
		if !strings.Contains(form, want) {
			t.Errorf("new form lacks %q\n%s", want, form)
		}
	}
	if strings.Contains(form, `id="cfg-secret_headers-clear"`) {
		t.Error("a new form offers to remove a stored write-only value")
	}

	const secretValue = "Bearer pages-canary-0042"
	wantRedirect(t, cb.post(t, "/ui/plugins/http-poster", url.Values{"name": {"hook"}, "enabled": {"true"},
		"url": {"https://example.com/hook"}, "headers": {"X-A: 1"}, "secret_headers": {"Authorization: " + secretValue}}),
		"/ui/plugins/http-poster/hook")
	if cb.actions.count() != 1 {
		t.Errorf("RoutesChanged calls after create = %d, want 1", cb.actions.count())
	}
	detail := cb.get(t, "/ui/plugins/http-poster/hook", http.StatusOK)
	for _, want := range []string{"Saved.", "https://example.com/hook", "X-A: 1", "write-only, not shown",
		`data-confirm="Delete http-poster instance hook?"`} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q\n%s", want, detail)
		}
	}
	edit := cb.get(t, "/ui/plugins/http-poster/hook/edit", http.StatusOK)
	for _, want := range []string{`value="https://example.com/hook"`, ">X-A: 1\n</textarea>", `id="cfg-secret_headers-clear"`} {
		if !strings.Contains(edit, want) {
			t.Errorf("edit form lacks %q\n%s", want, edit)
		}
	}
	// Removing the write-only value takes the checkbox.
	wantRedirect(t, cb.post(t, "/ui/plugins/http-poster/hook", url.Values{"enabled": {"true"},
		"url": {"https://example.com/hook"}, "clear:secret_headers": {"true"}}), "/ui/plugins/http-poster/hook")
	if got, _ := readStored(t, cb.store, cb.box, "hook"); got.Secrets != nil {
		t.Errorf("secrets after removing them: %v", got.Secrets)
	}
	for _, body := range cb.c.seen {
		if strings.Contains(body, "pages-canary") {
			t.Fatal("a page shows a write-only value")
		}
	}

	// A map field that is not "Name: value" lines is refused at the field.
	r := cb.post(t, "/ui/plugins/http-poster/hook", url.Values{"enabled": {"true"}, "url": {"https://example.com/hook"}, "headers": {"no colon"}})
	if r.status != http.StatusUnprocessableEntity || !slices.Equal(formErrorFields(r.body), []string{"headers"}) {
		t.Errorf("bad header lines = %d, errors at %v\n%s", r.status, formErrorFields(r.body), r.body)
	}

	// A route names inbox: its delete is refused with a flash.
	wantRedirect(t, cb.post(t, "/ui/plugins/file-writer/inbox/delete", nil), "/ui/plugins/file-writer/inbox")
	if body := cb.get(t, "/ui/plugins/file-writer/inbox", http.StatusOK); !strings.Contains(body, "Not deleted: a route names this instance.") {
		t.Errorf("no refusal flash:\n%s", body)
	}
	if _, err := cb.store.GetPluginConfig(ctx, "inbox"); err != nil {
		t.Fatalf("an instance in use was deleted: %v", err)
	}
	// Deleting releases the certificates the instance used.
	stored, err := certs.Import(ctx, cb.store, cb.box, certstest.CertsPEM(certstest.ValidLeaf(t, certstest.CA(t, "CA"), "a.example", certstest.ECKey(t)).Cert), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := cb.store.SetCertificateUses(ctx, records.PluginCertificateUse, "archive", []int64{stored[0].ID}); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, cb.post(t, "/ui/plugins/file-writer/archive/delete", nil), "/ui/plugins/file-writer")
	if _, err := cb.store.GetPluginConfig(ctx, "archive"); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("archive after delete: %v", err)
	}
	if uses, err := cb.store.ListCertificateUses(ctx, stored[0].ID); err != nil || len(uses) != 0 {
		t.Errorf("certificate uses after the instance's delete: %v, %v", uses, err)
	}
	if body := cb.get(t, "/ui/plugins/file-writer", http.StatusOK); !strings.Contains(body, "Deleted.") || strings.Contains(body, "archive") {
		t.Errorf("type page after delete:\n%s", body)
	}
}

func TestPluginPagesNotFoundAndCSRF(t *testing.T) {
	cb := setupConfigPages(t)
	cb.seedRouting(t)
	for _, path := range []string{"/ui/plugins/no-such-type", "/ui/plugins/no-such-type/new", "/ui/plugins/file-writer/missing",
		"/ui/plugins/file-writer/missing/edit", "/ui/plugins/file-poller/inbox", "/ui/plugins/file-poller/inbox/edit",
		"/ui/plugins/file-writer/Bad%20Name"} {
		cb.get(t, path, http.StatusNotFound)
	}
	for _, path := range []string{"/ui/plugins/no-such-type", "/ui/plugins/file-writer/missing", "/ui/plugins/file-writer/missing/delete",
		"/ui/plugins/file-poller/inbox/delete"} {
		if r := cb.post(t, path, url.Values{"name": {"x"}}); r.status != http.StatusNotFound {
			t.Errorf("POST %s = %d, want 404", path, r.status)
		}
	}
	if _, err := cb.store.GetPluginConfig(context.Background(), "inbox"); err != nil {
		t.Fatalf("inbox was deleted through another type's path: %v", err)
	}
	for _, path := range []string{"/ui/plugins/file-writer", "/ui/plugins/file-writer/inbox", "/ui/plugins/file-writer/inbox/delete"} {
		if r := cb.c.post(t, path, url.Values{"name": {"x"}, "directory": {"/tmp"}}); r.status != http.StatusForbidden {
			t.Errorf("POST %s without CSRF token = %d, want 403", path, r.status)
		}
	}
	if _, err := cb.store.GetPluginConfig(context.Background(), "inbox"); err != nil {
		t.Fatalf("inbox was deleted without a CSRF token: %v", err)
	}
}

func TestConfigBody(t *testing.T) {
	specs := []module.FieldSpec{
		{Name: "url", Kind: module.KindText, Required: true},
		{Name: "port", Kind: module.KindInteger},
		{Name: "cert", Kind: module.KindCertificate},
		{Name: "jitter", Kind: module.KindNumber},
		{Name: "verbose", Kind: module.KindBoolean, Default: "true"},
		{Name: "retry.base", Kind: module.KindDuration},
		{Name: "headers", Kind: module.KindMap},
		{Name: "secret", Kind: module.KindMap, WriteOnly: true},
		{Name: "codes", Kind: module.KindList},
		{Name: "handoff.statuses", Kind: module.KindIntegerList},
	}
	tests := []struct {
		name    string
		form    url.Values
		editing bool
		want    string
		errs    map[string]string
	}{
		{"empty inputs are left out, booleans are not", url.Values{"url": {""}, "port": {" "}}, false,
			`{"enabled":false,"name":"n","verbose":false}`, nil},
		{"typed values", url.Values{"enabled": {"true"}, "url": {"http://x"}, "port": {"80"}, "cert": {"7"}, "jitter": {"0.5"},
			"verbose": {"true"}, "retry.base": {"2s"}, "headers": {"A: 1\r\n\r\nB:two words "}}, false,
			`{"cert":7,"enabled":true,"headers":{"A":"1","B":"two words"},"jitter":0.5,"name":"n","port":80,"retry":{"base":"2s"},"url":"http://x","verbose":true}`, nil},
		{"numbers that do not parse go on as text", url.Values{"port": {"eighty"}, "cert": {"0x1"}}, false,
			`{"cert":"0x1","enabled":false,"name":"n","port":"eighty","verbose":false}`, nil},
		{"an update names no instance; clearing a write-only map", url.Values{"secret": {"X: y"}, "clear:secret": {"true"}}, true,
			`{"enabled":false,"secret":{},"verbose":false}`, nil},
		{"a list by commas or lines", url.Values{"codes": {"message_failed, plugin_failed\r\n,\ncertificate_expired "}}, false,
			`{"codes":["message_failed","plugin_failed","certificate_expired"],"enabled":false,"name":"n","verbose":false}`, nil},
		{"a list of numbers goes as numbers, anything else as text", url.Values{"handoff.statuses": {"202, 204\nabc"}}, false,
			`{"enabled":false,"handoff":{"statuses":[202,204,"abc"]},"name":"n","verbose":false}`, nil},
		{"bad map lines", url.Values{"headers": {"A: 1\nno colon"}}, false, "", map[string]string{"headers": "line 2: write Name: value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := configBody(specs, tt.form, "n", tt.editing)
			if len(tt.errs) > 0 || len(errs) > 0 {
				if !reflect.DeepEqual(errs, tt.errs) {
					t.Errorf("errors = %v, want %v", errs, tt.errs)
				}
				return
			}
			if string(got) != tt.want {
				t.Errorf("body = %s\nwant   %s", got, tt.want)
			}
		})
	}
}

// TestPosterHandoffForm sets an http-poster's handoff block and await_completion from the
// form: labelled fields, statuses as numbers, and a refusal shown at the field.
func TestPosterHandoffForm(t *testing.T) {
	cb := setupConfigPages(t)
	form := cb.get(t, "/ui/plugins/http-poster/new", http.StatusOK)
	for _, want := range []string{`>Handoff: statuses</label>`, `>Handoff: reference: header</label>`,
		`>Handoff: reference: json field</label>`, `>Handoff: deadline</label>`, `>Await completion</label>`,
		"Numbers separated by commas"} {
		if !strings.Contains(form, want) {
			t.Errorf("new form lacks %q", want)
		}
	}
	wantRedirect(t, cb.post(t, "/ui/plugins/http-poster", url.Values{"name": {"erp"}, "enabled": {"true"},
		"url": {"https://erp.example/in"}, "handoff.statuses": {"202"}, "handoff.reference.json_field": {"job_id"},
		"handoff.deadline": {"4h"}}), "/ui/plugins/http-poster/erp")
	got, _ := readStored(t, cb.store, cb.box, "erp")
	h, _ := got.Config["handoff"].(map[string]any)
	ref, _ := h["reference"].(map[string]any)
	if fmt.Sprint(h["statuses"]) != "[202]" || h["deadline"] != "4h0m0s" || ref["json_field"] != "job_id" {
		t.Errorf("stored handoff = %v", got.Config["handoff"])
	}
	edit := cb.get(t, "/ui/plugins/http-poster/erp/edit", http.StatusOK)
	if !strings.Contains(edit, `name="handoff.statuses"`) || !strings.Contains(edit, `value="202"`) {
		t.Errorf("edit form does not show the statuses:\n%s", edit)
	}
	r := cb.post(t, "/ui/plugins/http-poster/erp", url.Values{"enabled": {"true"}, "url": {"https://erp.example/in"},
		"handoff.statuses": {"302"}, "handoff.deadline": {"4h"}})
	if r.status != http.StatusUnprocessableEntity || !slices.Equal(formErrorFields(r.body), []string{"handoff.statuses"}) {
		t.Errorf("a 302 handoff = %d, errors at %v\n%s", r.status, formErrorFields(r.body), r.body)
	}
}
