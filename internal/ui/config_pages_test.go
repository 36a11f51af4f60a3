package ui

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/secret"
	"wharf/internal/services"
	"wharf/internal/ui/session"
)

// configBundle is a signed-in client of a server with the services of fakeServices and a
// secrets box the test can open sealed values with.
type configBundle struct {
	*pagesBundle
	box *secret.Box
	svc *fakeServices
}

// setupConfigPages is setupPages with the services and secrets box the certificate,
// plugin and services pages use.
func setupConfigPages(t *testing.T) *configBundle {
	t.Helper()
	key, err := secret.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	b := newBundle(t)
	acts := &countingActions{}
	svc := &fakeServices{store: b.store, states: map[persistence.InstanceName]services.State{}}
	s := newServer(t, b, func(d *Deps) { d.Actions, d.Sealer, d.Services, d.Processes = acts, box, svc, b.store })
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)

	pb := &pagesBundle{bundle: b, actions: acts, c: b.client(t)}
	secret, _ := b.enroll(t, pb.c, "alice")
	if r := pb.c.signIn(t, "alice", testPassword, b.code(t, secret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in = %d\n%s", r.status, r.body)
	}
	pb.csrf = match(t, csrfRE, pb.c.get(t, "/ui/").body)
	return &configBundle{pagesBundle: pb, box: box, svc: svc}
}

// fakeServices keeps each instance's state in a map; starting an instance named in
// failStart fails.
type fakeServices struct {
	store     persistence.Store
	mu        sync.Mutex
	states    map[persistence.InstanceName]services.State
	failStart persistence.InstanceName
	calls     []string
}

func (f *fakeServices) List(ctx context.Context) ([]services.Status, error) {
	recs, err := f.store.ListPluginConfigs(ctx, "")
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []services.Status
	for _, rec := range recs {
		st := services.Status{Name: rec.Name, Type: rec.Type, Enabled: rec.Enabled, State: services.StateStopped}
		if p, ok := module.Lookup(rec.Type); ok {
			st.Role = p.Role
		}
		if s, ok := f.states[rec.Name]; ok {
			st.State = s
		}
		if st.State == services.StateFailed {
			st.Error = "listen tcp: address already in use"
		}
		out = append(out, st)
	}
	return out, nil
}

func (f *fakeServices) act(ctx context.Context, action string, name persistence.InstanceName, st services.State) error {
	if _, err := f.store.GetPluginConfig(ctx, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, action+" "+string(name))
	if st == services.StateRunning && name == f.failStart {
		f.states[name] = services.StateFailed
		return &persistence.FieldError{Field: "bind", Message: "listen tcp: address already in use"}
	}
	f.states[name] = st
	return nil
}

func (f *fakeServices) Start(ctx context.Context, n persistence.InstanceName) error {
	return f.act(ctx, "start", n, services.StateRunning)
}

func (f *fakeServices) Stop(ctx context.Context, n persistence.InstanceName) error {
	return f.act(ctx, "stop", n, services.StateStopped)
}

func (f *fakeServices) Restart(ctx context.Context, n persistence.InstanceName) error {
	return f.act(ctx, "restart", n, services.StateRunning)
}

func (f *fakeServices) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// upload posts a multipart form: fields, and file as the "file" part when not nil. The
// CSRF token is added unless withCSRF is false.
func (cb *configBundle) upload(t *testing.T, path string, fields map[string]string, file []byte, withCSRF bool) response {
	t.Helper()
	files := map[string][]byte{}
	if file != nil {
		files["file"] = file
	}
	return cb.uploadFiles(t, path, fields, files, withCSRF)
}

// uploadFiles posts a multipart form of fields and files, each file a part named by its key.
func (cb *configBundle) uploadFiles(t *testing.T, path string, fields map[string]string, files map[string][]byte, withCSRF bool) response {
	form := url.Values{}
	for k, v := range fields {
		form.Set(k, v)
	}
	if withCSRF {
		form.Set(session.CSRFField, cb.csrf)
	}
	var parts []filePart
	for name, data := range files {
		parts = append(parts, filePart{field: name, name: name + ".bin", data: data})
	}
	return postMultipartFiles(t, cb.c, cb.srv.URL+path, form, parts)
}

// filePart is one file of a multipart form: the form field, the file's name and its bytes.
type filePart struct {
	field, name string
	data        []byte
}

// postMultipart posts form as multipart/form-data, as a browser does, with file as the
// part "file" named fileName when file is not nil (an empty file input sends the part
// with no name and no bytes).
func postMultipart(t *testing.T, c *client, target string, form url.Values, fileName string, file []byte) response {
	t.Helper()
	var parts []filePart
	if file != nil {
		parts = append(parts, filePart{field: "file", name: fileName, data: file})
	}
	return postMultipartFiles(t, c, target, form, parts)
}

// postMultipartFiles posts form and the file parts as multipart/form-data.
func postMultipartFiles(t *testing.T, c *client, target string, form url.Values, files []filePart) response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, vs := range form {
		for _, v := range vs {
			mw.WriteField(k, v)
		}
	}
	for _, f := range files {
		fw, err := mw.CreateFormFile(f.field, f.name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(f.data)
	}
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, target, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(res.Body)
	c.seen = append(c.seen, body.String())
	return response{status: res.StatusCode, header: res.Header, body: body.String()}
}

var fieldErrorRE = regexp.MustCompile(`<span class="field-error" id="([a-z0-9_-]+)-error">`)

// formErrorFields lists the fields a refused form marks, by their config names.
func formErrorFields(body string) []string {
	var out []string
	for _, m := range fieldErrorRE.FindAllStringSubmatch(body, -1) {
		id := m[1]
		if rest, ok := strings.CutPrefix(id, "cfg-"); ok {
			id = strings.ReplaceAll(rest, "-", ".")
		}
		out = append(out, id)
	}
	return out
}
