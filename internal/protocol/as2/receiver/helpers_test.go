package receiver

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/dispatch"
	"wharf/internal/logging"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
	"wharf/internal/storage"
)

// schema applies every file of the module's schema directory, the tables of the
// module's other parts included.
func schema() []db.ModuleSchema {
	return []db.ModuleSchema{{Name: "as2", FS: os.DirFS("../schema")}}
}

// forEachDB runs fn against every available database.
func forEachDB(t *testing.T, fn func(t *testing.T, s *db.Store)) {
	dbtest.ForEachModules(t, schema(), fn)
}

// directory is a static profile.Directory keyed by (AS2-From, AS2-To).
type directory struct {
	mu       sync.Mutex
	inbounds map[[2]profile.AS2ID]profile.Inbound
	err      error // returned by every call when set
}

func newDirectory() *directory {
	return &directory{inbounds: map[[2]profile.AS2ID]profile.Inbound{}}
}

func (d *directory) add(in profile.Inbound) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inbounds[[2]profile.AS2ID{in.Remote.AS2ID, in.Local.AS2ID}] = in
}

func (d *directory) Inbound(_ context.Context, from, to profile.AS2ID) (profile.Inbound, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return profile.Inbound{}, d.err
	}
	in, ok := d.inbounds[[2]profile.AS2ID{from, to}]
	if !ok {
		return profile.Inbound{}, fmt.Errorf("AS2 profiles %s to %s: %w", from, to, persistence.ErrNotFound)
	}
	return in, nil
}

func (d *directory) InboundByParties(_ context.Context, org, partner string) (profile.Inbound, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, in := range d.inbounds {
		if string(in.Local.Organization) == org && string(in.Remote.Partner) == partner {
			return in, nil
		}
	}
	return profile.Inbound{}, fmt.Errorf("AS2 profiles %s and %s: %w", org, partner, persistence.ErrNotFound)
}

func (d *directory) Outbound(context.Context, string, string) (profile.Outbound, error) {
	return profile.Outbound{}, fmt.Errorf("outbound: %w", persistence.ErrNotFound)
}

var _ profile.Directory = (*directory)(nil)

// party is one side of an agreement with its keys.
type party struct {
	id   profile.AS2ID
	name persistence.PartyName
	cert *x509.Certificate
	key  crypto.Signer
}

func testParty(t testing.TB, name string) party {
	id := as2test.NewIdentity(t, name)
	return party{id: profile.AS2ID(strings.ToUpper(name)), name: persistence.PartyName(name), cert: id.Cert, key: id.Key}
}

// inbound makes the profiles of partner sending to org; change adjusts the partner's
// remote profile (it starts with the secure defaults).
func inbound(org, partner party, change func(*profile.Remote)) profile.Inbound {
	local := profile.NewLocal()
	local.Organization, local.AS2ID = org.name, org.id
	remote := profile.NewRemote()
	remote.Partner, remote.AS2ID = partner.name, partner.id
	remote.EndpointURL = "http://127.0.0.1:1/as2"
	if change != nil {
		change(&remote)
	}
	return profile.Inbound{
		Local:               local,
		Remote:              remote,
		Decryption:          []cms.Recipient{{Certificate: org.cert, Key: org.key.(crypto.Decrypter)}},
		PartnerCertificates: []*x509.Certificate{partner.cert},
		Signer:              &mime.Signer{Certificate: org.cert, Key: org.key, Digest: cms.SHA256},
	}
}

// relaxed accepts unsigned, unencrypted and SHA-1 messages.
func relaxed(r *profile.Remote) {
	r.RequireSigned, r.RequireEncrypted, r.AllowSHA1 = false, false, true
}

type nopWaker struct{}

func (nopWaker) Wake([]persistence.InstanceName) {}

// bench is one database with its blob store, dispatcher and parties, on which receivers
// are started.
type bench struct {
	t     *testing.T
	ctx   context.Context
	store *db.Store
	sql   module.SQL
	blobs *storage.Local
	// stores, when set, is where the receivers store payloads instead of blobs.
	stores *storage.Stores
	disp   *dispatch.Dispatcher
	log    *slog.Logger
	logs   *logRecorder
}

func newBench(t *testing.T, s *db.Store, orgs []party, partners []party) *bench {
	t.Helper()
	blobs, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rec := &logRecorder{out: t.Output()}
	log := slog.New(logging.NewHandler(rec))
	b := &bench{t: t, ctx: context.Background(), store: s, sql: s.ModuleSQL(), blobs: blobs, log: log, logs: rec}
	b.disp = dispatch.New(s, blobs, nopWaker{}, log)
	for _, o := range orgs {
		b.createParty(persistence.PartyOrganization, o.name)
	}
	for _, p := range partners {
		b.createParty(persistence.PartyPartner, p.name)
	}
	return b
}

func (b *bench) createParty(kind persistence.PartyKind, name persistence.PartyName) {
	b.t.Helper()
	if _, err := b.store.CreateParty(b.ctx, persistence.Party{Kind: kind, Name: name, DisplayName: string(name)}); err != nil {
		b.t.Fatal(err)
	}
}

// start runs a receiver on a free loopback port until the test ends; tune adjusts its
// internals before it starts.
func (b *bench) start(name string, dir profile.Directory, change func(*Config, *Deps), tune ...func(*Receiver)) *Receiver {
	b.t.Helper()
	cfg := newConfig()
	cfg.Port = 0
	deps := Deps{
		Directory: dir,
		DB:        b.sql,
		Ingest:    b.disp,
		Blobs:     b.blobs,
		Store:     b.store,
		Logger:    b.log,
		BaseURL:   "http://127.0.0.1:8080",
		TempDir:   filepath.Join(b.t.TempDir(), "tmp"),
	}
	if b.stores != nil {
		deps.Blobs = b.stores
	}
	if change != nil {
		change(cfg, &deps)
	}
	// Registered before the receiver's Stop, so it runs after it: nothing a request
	// spooled is left behind.
	b.t.Cleanup(func() {
		if left, err := os.ReadDir(deps.TempDir); err == nil && len(left) > 0 {
			b.t.Errorf("%d files left in the temporary directory, e.g. %s", len(left), left[0].Name())
		}
	})
	rc, err := newReceiver(deps, persistence.InstanceName(name), cfg)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, fn := range tune {
		fn(rc)
	}
	if err := rc.Start(b.ctx); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rc.Stop(ctx); err != nil {
			b.t.Errorf("stop: %v", err)
		}
	})
	return rc
}

func (rc *Receiver) url() string { return "http://" + rc.Addr().String() + rc.cfg.Path }

// bodyModes are the two ways a receiver holds a request body: in memory (the default
// for small bodies), and in a temporary file, every body however small.
var bodyModes = []struct {
	name string
	tune func(*Receiver)
}{
	{"memory", func(*Receiver) {}},
	{"file", spoolAll},
}

// spoolAll makes a receiver keep every request body in a file.
func spoolAll(rc *Receiver) { rc.spoolAbove = 0 }

// messageCount is how many messages the database holds with a document: the records
// of refused messages are not counted.
func (b *bench) messageCount() int {
	b.t.Helper()
	_, total, err := b.store.ListMessages(b.ctx, persistence.MessageFilter{})
	if err != nil {
		b.t.Fatal(err)
	}
	_, refused, err := b.store.ListMessages(b.ctx, persistence.MessageFilter{Status: persistence.StatusRefused})
	if err != nil {
		b.t.Fatal(err)
	}
	return total - refused
}

// inboundRows is how many as2_inbound rows name the Message-ID.
func (b *bench) inboundRows(messageID string) int {
	b.t.Helper()
	var n int
	err := b.sql.Read(b.ctx, func(tx module.Tx) error {
		return tx.QueryRow(b.ctx, `SELECT COUNT(*) FROM as2_inbound WHERE as2_message_id = ?`, messageID).Scan(&n)
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return n
}

// payload reads a stored stage of a message.
func (b *bench) payload(id int64, stage persistence.PayloadStage) []byte {
	b.t.Helper()
	r := b.openPayload(id, stage)
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		b.t.Fatal(err)
	}
	return data
}

// openPayload opens a stored stage of a message.
func (b *bench) openPayload(id int64, stage persistence.PayloadStage) io.ReadCloser {
	b.t.Helper()
	p, err := b.store.GetPayload(b.ctx, id, stage)
	if err != nil {
		b.t.Fatalf("payload %s of message %d: %v", stage, id, err)
	}
	var r io.ReadCloser
	if b.stores != nil {
		r, err = b.stores.Open(b.ctx, p.Key)
	} else {
		r, err = b.blobs.Open(b.ctx, p.Key)
	}
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// message finds the message a source stored for an AS2 Message-ID.
func (b *bench) message(source, messageID string) persistence.Message {
	b.t.Helper()
	m, err := b.store.FindMessageByOrigin(b.ctx, persistence.InstanceName(source), messageID)
	if err != nil {
		b.t.Fatalf("message %s from %s: %v", messageID, source, err)
	}
	return m
}

// refused finds the one refused message kept for an AS2 Message-ID.
func (b *bench) refused(messageID string) persistence.Message {
	b.t.Helper()
	ms, _, err := b.store.ListMessages(b.ctx, persistence.MessageFilter{Q: messageID})
	if err != nil {
		b.t.Fatal(err)
	}
	var out []persistence.Message
	for _, m := range ms {
		if m.OriginEventID == messageID && m.Status == persistence.StatusRefused {
			out = append(out, m)
		}
	}
	if len(out) != 1 {
		b.t.Fatalf("%d refused messages for %s, want 1", len(out), messageID)
	}
	return out[0]
}

// reply is an HTTP answer read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// post sends an AS2 request with Go's HTTP client.
func post(t testing.TB, url, contentType string, header http.Header, body []byte) reply {
	t.Helper()
	r, err := send(url, contentType, header, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send is post for a goroutine other than the test's.
func send(url, contentType string, header http.Header, body []byte) (reply, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// rawPost writes a request over a TCP connection exactly as given: the header fields in
// their order, then the body with Content-Length, or chunked in chunks of chunk bytes
// when chunk > 0.
func rawPost(t testing.TB, addr, path string, fields [][2]string, body []byte, chunk int) reply {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", path, addr)
	for _, f := range fields {
		fmt.Fprintf(&b, "%s: %s\r\n", f[0], f[1])
	}
	if chunk > 0 {
		b.WriteString("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
		for rest := body; len(rest) > 0; {
			n := min(chunk, len(rest))
			fmt.Fprintf(&b, "%x\r\n", n)
			b.Write(rest[:n])
			b.WriteString("\r\n")
			rest = rest[n:]
		}
		b.WriteString("0\r\n\r\n")
	} else {
		fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
		b.Write(body)
	}
	if _, err := conn.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	return readAnswer(t, conn)
}

func readAnswer(t testing.TB, conn net.Conn) reply {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	return readReply(t, resp)
}

// readReply reads an answer whole.
func readReply(t testing.TB, resp *http.Response) reply {
	t.Helper()
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

// parseMDN reads an MDN answer, verifying its signature with the organization's
// certificate when it is signed.
func parseMDN(t testing.TB, a reply, org *x509.Certificate) *mime.ReceivedMDN {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d: %s", a.status, a.body)
	}
	m, err := mime.ParseMDN(a.header.Get("Content-Type"), a.body, mime.MDNParseOptions{PartnerCertificates: []*x509.Certificate{org}})
	if err != nil {
		t.Fatalf("MDN: %v\n%s", err, a.body)
	}
	return m
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logRecorder keeps log records for assertions and writes them to the test's output.
type logRecorder struct {
	mu      sync.Mutex
	out     io.Writer
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecorder) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	l.mu.Lock()
	l.records = append(l.records, r)
	l.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	b.WriteByte('\n')
	_, err := io.WriteString(l.out, b.String())
	return err
}

func (l *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logView{l: l, attrs: append([]slog.Attr{}, as...)}
}

func (l *logRecorder) WithGroup(string) slog.Handler { return l }

// logView is the recorder with attributes added by Logger.With.
type logView struct {
	l     *logRecorder
	attrs []slog.Attr
}

func (v *logView) Enabled(context.Context, slog.Level) bool { return true }
func (v *logView) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(v.attrs...)
	return v.l.Handle(ctx, r)
}
func (v *logView) WithAttrs(as []slog.Attr) slog.Handler {
	return &logView{l: v.l, attrs: append(append([]slog.Attr{}, v.attrs...), as...)}
}
func (v *logView) WithGroup(string) slog.Handler { return v }

// lines returns the recorded records that carry attribute key with value.
func (l *logRecorder) lines(key, value string) []slog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Record
	for _, r := range l.records {
		found := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key && a.Value.String() == value {
				found = true
				return false
			}
			return true
		})
		if found {
			out = append(out, r)
		}
	}
	return out
}
