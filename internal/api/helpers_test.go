package api

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"wharf/internal/erasure"
	"wharf/internal/logging/logtest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"

	// The plugin types the tests configure register themselves.
	_ "wharf/internal/protocol/file"
	_ "wharf/internal/protocol/httppost"
)

// bundle is one test's server over a real store, with a client holding a valid token.
type bundle struct {
	t      *testing.T
	store  persistence.Store
	ops    *testOps
	sealer *testSealer
	srv    *httptest.Server
	token  string
	dir    string
	logs   *logtest.Buffer
}

// eachStore runs fn against a fresh store of every database under test.
func eachStore(t *testing.T, fn func(t *testing.T, b *bundle)) {
	t.Helper()
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		fn(t, setup(t, s))
	})
}

func setup(t *testing.T, store persistence.Store) *bundle {
	t.Helper()
	return setupWith(t, store, nil)
}

// setupWith is setup with modules' routes and panels mounted.
func setupWith(t *testing.T, store persistence.Store, mods []ModuleAPI) *bundle {
	t.Helper()
	dir := t.TempDir()
	b := &bundle{t: t, store: store, dir: dir, logs: &logtest.Buffer{}}
	b.ops = &testOps{store: store, services: map[persistence.InstanceName]ServiceStatus{}}
	b.sealer = newTestSealer(t)
	logger := slog.New(slog.NewTextHandler(io.MultiWriter(b.logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	var eraser Erasure
	if st, ok := store.(*db.Store); ok {
		eraser = erasure.New(st, dirPayloads{}, logger)
	}
	s := New(Deps{
		Erasure:  eraser,
		Store:    store,
		Payloads: dirPayloads{},
		Ingest:   &testIngester{store: store, dir: filepath.Join(dir, "blobs")},
		Ops:      b.ops,
		Sealer:   b.sealer,
		Logger:   logger,
		Version:  "test",
		Modules:  mods,
	})
	b.srv = httptest.NewServer(s.Handler())
	t.Cleanup(b.srv.Close)
	b.token = b.newToken("tester")
	return b
}

// newToken creates an API token and returns it.
func (b *bundle) newToken(name string) string {
	b.t.Helper()
	tok := "wharf_" + rand.Text()
	if _, err := b.store.CreateAPIToken(context.Background(), name, HashToken(tok)); err != nil {
		b.t.Fatalf("create token: %v", err)
	}
	return tok
}

// response is what a request got back.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode response %s: %v", r.body, err)
	}
}

// errorOf decodes an error response.
func (r response) errorOf(t *testing.T) errorObject {
	t.Helper()
	var e errorBody
	r.json(t, &e)
	if e.Error.Code == "" {
		t.Fatalf("not an error response: %s", r.body)
	}
	return e.Error
}

type reqOpt func(*http.Request)

func withHeader(k, v string) reqOpt    { return func(r *http.Request) { r.Header.Set(k, v) } }
func withoutHeader(k string) reqOpt    { return func(r *http.Request) { r.Header.Del(k) } }
func withToken(tok string) reqOpt      { return withHeader("Authorization", "Bearer "+tok) }
func withContentType(ct string) reqOpt { return withHeader("Content-Type", ct) }

// do sends a request with the bundle's token; a non-empty body is sent as JSON.
func (b *bundle) do(method, path, body string, opts ...reqOpt) response {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	return b.send(method, path, rd, "application/json", opts...)
}

func (b *bundle) send(method, path string, body io.Reader, contentType string, opts ...reqOpt) response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	if body != nil || method == http.MethodPost || method == http.MethodPut {
		req.Header.Set("Content-Type", contentType)
	}
	for _, o := range opts {
		o(req)
	}
	res, err := b.srv.Client().Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// must sends a request and fails the test unless it gets want.
func (b *bundle) must(want int, method, path, body string, opts ...reqOpt) response {
	b.t.Helper()
	r := b.do(method, path, body, opts...)
	if r.status != want {
		b.t.Fatalf("%s %s = %d %s, want %d", method, path, r.status, r.body, want)
	}
	return r
}

// part is one field of a multipart upload; a file has a file name.
type part struct {
	name     string
	fileName string
	value    string
}

func multipartBody(t *testing.T, parts []part) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.fileName != "" {
			h := make(map[string][]string)
			h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="%s"; filename="%s"`, p.name, p.fileName)}
			h["Content-Type"] = []string{"application/octet-stream"}
			w, err = mw.CreatePart(h)
		} else {
			w, err = mw.CreateFormField(p.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, p.value); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, mw.FormDataContentType()
}

// upload sends a message by hand.
func (b *bundle) upload(parts []part, opts ...reqOpt) response {
	b.t.Helper()
	body, ct := multipartBody(b.t, parts)
	opts = append([]reqOpt{withHeader("X-Requested-With", "test")}, opts...)
	return b.send(http.MethodPost, "/api/v1/messages", body, ct, opts...)
}

// seed creates the parties and instances most tests route between: organization local,
// partner acme, a file poller "outbox", file writers "inbox" and "archive".
func (b *bundle) seed() {
	b.t.Helper()
	b.must(201, "POST", "/api/v1/organizations", `{"name":"local","display_name":"Us"}`)
	b.must(201, "POST", "/api/v1/partners", `{"name":"acme","display_name":"ACME Corp"}`)
	b.must(201, "POST", "/api/v1/plugins/configs/file-poller", b.pollerJSON("outbox"))
	b.must(201, "POST", "/api/v1/plugins/configs/file-writer", b.writerJSON("inbox"))
	b.must(201, "POST", "/api/v1/plugins/configs/file-writer", b.writerJSON("archive"))
}

func (b *bundle) pollerJSON(name string) string {
	return fmt.Sprintf(`{"name":%q,"directory":%q}`, name, filepath.Join(b.dir, name))
}

func (b *bundle) writerJSON(name string) string {
	return fmt.Sprintf(`{"name":%q,"directory":%q}`, name, filepath.Join(b.dir, name))
}

// messageCount is how many messages the store holds.
func (b *bundle) messageCount() int {
	b.t.Helper()
	_, total, err := b.store.ListMessages(context.Background(), persistence.MessageFilter{})
	if err != nil {
		b.t.Fatal(err)
	}
	return total
}

// testIngester stores a document the way the real ingester does, minus the bus: blob
// first, then the message and its deliveries in one transaction.
type testIngester struct {
	store persistence.Store
	dir   string
}

func (in *testIngester) Ingest(ctx context.Context, items []module.Incoming) ([]module.IngestResult, error) {
	first, err := in.store.AllocateMessageIDs(ctx, len(items))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(in.dir, 0o700); err != nil {
		return nil, err
	}
	routes, err := in.store.ListRoutes(ctx)
	if err != nil {
		return nil, err
	}
	var batch []persistence.NewMessage
	for i, it := range items {
		id := first + int64(i)
		data, err := io.ReadAll(it.Body)
		if err != nil {
			return nil, err
		}
		key := filepath.Join(in.dir, fmt.Sprintf("%d-unpacked", id))
		if err := os.WriteFile(key, data, 0o600); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		hexSum := hex.EncodeToString(sum[:])
		targets := []persistence.InstanceName{it.Target}
		if it.Target == "" {
			targets = matchRoutes(routes, it.Source, it.From, it.To)
		}
		corr := it.CorrelationID
		if corr == "" {
			corr = fmt.Sprintf("corr-%d", id)
		}
		origin := it.OriginEventID
		if origin == "" {
			origin = fmt.Sprintf("origin-%d", id)
		}
		batch = append(batch, persistence.NewMessage{
			Message: persistence.Message{ID: id, From: it.From, To: it.To, Source: it.Source,
				OriginalFileName: it.FileName, Size: int64(len(data)), SHA256: hexSum,
				CorrelationID: corr, OriginEventID: origin, Metadata: it.Metadata},
			Payloads: []persistence.Payload{{MessageID: id, Stage: persistence.PayloadUnpacked, Key: key,
				Size: int64(len(data)), SHA256: hexSum}},
			Dispatch: true,
			Targets:  targets,
			Actor:    it.Actor,
		})
	}
	msgs, err := in.store.InsertMessages(ctx, batch)
	if err != nil {
		return nil, err
	}
	out := make([]module.IngestResult, len(msgs))
	for i, m := range msgs {
		out[i] = module.IngestResult{Message: m}
	}
	return out, nil
}

func matchRoutes(routes []persistence.Route, source persistence.InstanceName, from, to persistence.PartyName) []persistence.InstanceName {
	var out []persistence.InstanceName
	for _, r := range routes {
		if r.Matches(source, from, to) {
			out = append(out, r.Target)
		}
	}
	return out
}

// dirPayloads opens blobs whose keys are file paths.
type dirPayloads struct{}

func (dirPayloads) Open(ctx context.Context, key string) (io.ReadCloser, error) { return os.Open(key) }

// Delete removes a blob whose key is a file path; a missing one is no error.
func (dirPayloads) Delete(ctx context.Context, key string) error {
	if err := os.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// testOps implements Ops over the store, with services held in memory.
type testOps struct {
	store persistence.Store

	mu            sync.Mutex
	routesChanged int
	services      map[persistence.InstanceName]ServiceStatus
	actions       []string
}

func (o *testOps) Redispatch(ctx context.Context, messageID int64, actor string) ([]persistence.Delivery, error) {
	m, err := o.store.GetMessage(ctx, messageID)
	if err != nil {
		return nil, err
	}
	routes, err := o.store.ListRoutes(ctx)
	if err != nil {
		return nil, err
	}
	return o.store.Redispatch(ctx, messageID, matchRoutes(routes, m.Source, m.From, m.To), nil, nil, actor)
}

func (o *testOps) Redeliver(ctx context.Context, deliveryID int64, mode persistence.ResendMode, actor string) (persistence.Delivery, error) {
	return o.store.Redeliver(ctx, deliveryID, mode, actor)
}

func (o *testOps) ResubmitDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return o.store.ResubmitDeliveries(ctx, ids, actor)
}

func (o *testOps) SkipDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return o.store.SkipDeliveries(ctx, ids, actor)
}

func (o *testOps) ActOnDeliveries(ctx context.Context, action persistence.DeliveryAction, ids []int64, actor string) ([]persistence.DeliveryActionResult, error) {
	return o.store.ActOnDeliveries(ctx, action, ids, actor)
}

func (o *testOps) RoutesChanged(ctx context.Context) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.routesChanged++
}

func (o *testOps) SettingsChanged(context.Context) {}

func (o *testOps) changes() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.routesChanged
}

func (o *testOps) Services(ctx context.Context) []ServiceStatus {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []ServiceStatus
	for _, s := range o.services {
		out = append(out, s)
	}
	return out
}

func (o *testOps) act(name persistence.InstanceName, action string, state ServiceState) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.services[name]
	if !ok {
		return fmt.Errorf("service %s: %w", name, persistence.ErrNotFound)
	}
	s.State = state
	o.services[name] = s
	o.actions = append(o.actions, action+" "+string(name))
	return nil
}

func (o *testOps) StartService(ctx context.Context, name persistence.InstanceName) error {
	return o.act(name, "start", ServiceRunning)
}

func (o *testOps) StopService(ctx context.Context, name persistence.InstanceName) error {
	return o.act(name, "stop", ServiceStopped)
}

func (o *testOps) RestartService(ctx context.Context, name persistence.InstanceName) error {
	return o.act(name, "restart", ServiceRunning)
}

// testSealer seals with AES-GCM under a key of its own.
type testSealer struct{ aead cipher.AEAD }

func newTestSealer(t *testing.T) *testSealer {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return &testSealer{aead: aead}
}

func (s *testSealer) Seal(plain []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, plain, nil), nil
}

func (s *testSealer) Open(sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("sealed value too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], nil)
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
