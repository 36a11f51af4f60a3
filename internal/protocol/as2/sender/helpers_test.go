package sender

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/dispatch"
	"wharf/internal/logging"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
	"wharf/internal/storage"
)

// staticDirectory resolves fixed profiles, standing in for the profile store.
type staticDirectory struct {
	mu  sync.Mutex
	out map[string]profile.Outbound
}

func (d *staticDirectory) set(org, partner string, o profile.Outbound) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.out == nil {
		d.out = map[string]profile.Outbound{}
	}
	d.out[org+"/"+partner] = o
}

func (d *staticDirectory) update(org, partner string, fn func(*profile.Outbound)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o := d.out[org+"/"+partner]
	fn(&o)
	d.out[org+"/"+partner] = o
}

func (d *staticDirectory) Outbound(_ context.Context, org, partner string) (profile.Outbound, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o, ok := d.out[org+"/"+partner]
	if !ok {
		return profile.Outbound{}, fmt.Errorf("profiles %s/%s: %w", org, partner, persistence.ErrNotFound)
	}
	return o, nil
}

func (d *staticDirectory) Inbound(context.Context, profile.AS2ID, profile.AS2ID) (profile.Inbound, error) {
	return profile.Inbound{}, persistence.ErrNotFound
}

func (d *staticDirectory) InboundByParties(context.Context, string, string) (profile.Inbound, error) {
	return profile.Inbound{}, persistence.ErrNotFound
}

// moduleSchemas is the AS2 module's schema directory. While a teammate's earlier version
// has not landed yet, an empty statement stands in for it so the numbering holds.
func moduleSchemas(t testing.TB) []db.ModuleSchema {
	t.Helper()
	src := os.DirFS("../schema")
	fsys := fstest.MapFS{}
	for _, dialect := range []string{"sqlite", "postgres"} {
		entries, err := fs.ReadDir(src, dialect)
		if err != nil {
			t.Fatal(err)
		}
		have, top := map[int]bool{}, 0
		for _, e := range entries {
			b, err := fs.ReadFile(src, dialect+"/"+e.Name())
			if err != nil {
				t.Fatal(err)
			}
			fsys[dialect+"/"+e.Name()] = &fstest.MapFile{Data: b}
			num, _, _ := strings.Cut(e.Name(), "_")
			if n, err := strconv.Atoi(num); err == nil {
				have[n], top = true, max(top, n)
			}
		}
		for v := 1; v < top; v++ {
			if !have[v] {
				fsys[fmt.Sprintf("%s/%04d_pending.sql", dialect, v)] = &fstest.MapFile{Data: []byte("SELECT 1;\n")}
			}
		}
	}
	return []db.ModuleSchema{{Name: "as2", FS: fsys}}
}

type noWaker struct{}

func (noWaker) Wake([]persistence.InstanceName) {}

const (
	testTarget persistence.InstanceName = "as2_out"
	testSource persistence.InstanceName = "src"
)

// bundle is one test's gateway: a real store, payload storage and dispatcher, the
// sender under test and its MDN intake.
type bundle struct {
	store   *db.Store
	blobs   *storage.Local
	disp    *dispatch.Dispatcher
	dir     *staticDirectory
	sender  *Sender
	intake  *Intake
	ours    as2test.Identity
	partner as2test.Identity
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(logging.NewHandler(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// setup makes parties local and acme, a source and the sender instance, and profiles
// that send to endpoint with the secure defaults changed by mutate.
func setup(t *testing.T, s *db.Store, endpoint string, mutate func(*profile.Outbound)) *bundle {
	t.Helper()
	ctx := context.Background()
	for _, p := range []persistence.Party{
		{Kind: persistence.PartyOrganization, Name: "local", DisplayName: "Local"},
		{Kind: persistence.PartyPartner, Name: "acme", DisplayName: "ACME"},
	} {
		if _, err := s.CreateParty(ctx, p); err != nil && !errors.Is(err, persistence.ErrConflict) {
			t.Fatal(err)
		}
	}
	for _, pc := range []persistence.PluginConfig{
		{Name: testSource, Type: persistence.PluginFilePoller, Enabled: true, Config: []byte(`{}`)},
		{Name: testTarget, Type: persistence.PluginAS2Sender, Enabled: true, Config: []byte(`{}`)},
	} {
		if _, err := s.CreatePluginConfig(ctx, pc); err != nil {
			t.Fatal(err)
		}
	}
	blobs, err := storage.NewLocal(filepath.Join(t.TempDir(), "payloads"))
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{
		store: s, blobs: blobs, dir: &staticDirectory{},
		ours: as2test.NewIdentity(t, "wharf-org"), partner: as2test.NewIdentity(t, "acme-partner"),
	}
	log := testLogger(t)
	b.disp = dispatch.New(s, blobs, noWaker{}, log)

	loc := profile.NewLocal()
	loc.Organization, loc.AS2ID, loc.MDNNotificationTo = "local", "WHARF ORG", "as2@wharf.test"
	rem := profile.NewRemote()
	rem.Partner, rem.AS2ID, rem.EndpointURL = "acme", "ACME", endpoint
	rem.Retry = delivery.RetryPolicy{Strategy: delivery.RetryFixed, Base: delivery.Duration(time.Second), MaxDelay: delivery.Duration(time.Second)}
	out := profile.Outbound{
		Local: loc, Remote: rem,
		Signer:              &mime.Signer{Certificate: b.ours.Cert, Key: b.ours.Key},
		EncryptTo:           b.partner.Cert,
		PartnerCertificates: []*x509.Certificate{b.partner.Cert},
	}
	if mutate != nil {
		mutate(&out)
	}
	b.dir.set("local", "acme", out)

	deps := Deps{
		Directory: b.dir, DB: s.ModuleSQL(), Blobs: blobs, Store: s, Logger: log,
		BaseURL:     "http://127.0.0.1:8080",
		AsyncMDNURL: func(org string) string { return "http://127.0.0.1:8081/as2/mdn?org=" + org },
	}
	d, err := New(deps, testTarget, NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	b.sender = d.(*Sender)
	t.Cleanup(b.sender.Close)
	if b.intake, err = NewIntake(deps); err != nil {
		t.Fatal(err)
	}
	return b
}

// ingest stores a document from local to acme with one delivery to the sender;
// ingestFrom between other parties.
func (b *bundle) ingest(t *testing.T, name string, payload []byte) persistence.Message {
	t.Helper()
	return b.ingestFrom(t, "local", "acme", name, payload)
}

func (b *bundle) ingestFrom(t *testing.T, from, to persistence.PartyName, name string, payload []byte) persistence.Message {
	t.Helper()
	res, err := b.disp.Ingest(context.Background(), []module.Incoming{{
		Source: testSource, From: from, To: to, FileName: persistence.FileName(name),
		Body: bytes.NewReader(payload), Target: testTarget,
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ingest: %v %v", err, res[0].Err)
	}
	return res[0].Message
}

// attempt claims the sender's due delivery as the engine does (now is the claim's
// clock), lets the sender attempt it and records the outcome.
func (b *bundle) attempt(t *testing.T, now time.Time) (persistence.Delivery, delivery.Result) {
	t.Helper()
	c := b.claim(t, now)
	res := b.deliver(c)
	b.complete(t, c, res)
	return c.Delivery, res
}

func (b *bundle) claim(t *testing.T, now time.Time) persistence.Claim {
	t.Helper()
	ctx := context.Background()
	claims, err := b.store.ClaimDeliveries(ctx, testTarget, 1, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 1 {
		t.Fatalf("%d deliveries claimed, want 1", len(claims))
	}
	return claims[0]
}

func (b *bundle) deliver(c persistence.Claim) delivery.Result {
	ctx := logging.WithDeliveryID(logging.WithMessageID(context.Background(), c.Message.ID), c.Delivery.ID)
	return b.sender.Deliver(ctx, delivery.Attempt{
		Delivery: c.Delivery, Message: c.Message, Number: c.Delivery.Attempts,
		Open: func(ctx context.Context) (io.ReadCloser, error) {
			p, err := b.store.GetPayload(ctx, c.Message.ID, persistence.PayloadUnpacked)
			if err != nil {
				return nil, err
			}
			return b.blobs.Open(ctx, p.Key)
		},
	})
}

// complete records a result the way the engine does, without the instance's backstop
// policy.
func (b *bundle) complete(t *testing.T, c persistence.Claim, r delivery.Result) {
	t.Helper()
	comp := persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: r.Kind, At: time.Now(),
		Payloads: r.Payloads, Downstream: r.Downstream}
	var keys []string
	for _, p := range r.Payloads {
		keys = append(keys, p.Key)
	}
	if err := b.blobs.Sync(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
	if r.Err != nil {
		comp.Reason = persistence.SanitizeReason(r.Err.Error())
	}
	if r.Kind == persistence.OutcomeDelivered {
		comp.Reason = r.Note
	}
	switch r.Kind {
	case persistence.OutcomeAwaitingAck:
		comp.AckDeadline = r.Deadline
	case persistence.OutcomeRetry:
		comp.NextAttemptAt = r.At
	}
	errs, err := b.store.CompleteDeliveries(context.Background(), []persistence.Completion{comp})
	if err != nil || errs[0] != nil {
		t.Fatalf("complete: %v %v", err, errs)
	}
}

// historyHas reports whether a line of the message's history contains text.
func (b *bundle) historyHas(t *testing.T, messageID int64, text string) bool {
	t.Helper()
	entries, err := b.store.ListHistory(context.Background(), messageID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Reason, text) {
			return true
		}
	}
	return false
}

func (b *bundle) delivery(t *testing.T, id int64) persistence.Delivery {
	t.Helper()
	d, err := b.store.GetDelivery(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (b *bundle) records(t *testing.T, messageID int64) []OutboundRecord {
	t.Helper()
	recs, err := FindOutbound(context.Background(), b.store.ModuleSQL(), messageID)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// receipt reads the message's receipt stage, or nil when it has none.
func (b *bundle) receipt(t *testing.T, messageID int64) []byte {
	t.Helper()
	ctx := context.Background()
	p, err := b.store.GetPayload(ctx, messageID, persistence.PayloadReceipt)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.blobs.Open(ctx, p.Key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	raw, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// downstream is the delivery's downstream status as the message's history folds it, ""
// when it has none.
func (b *bundle) downstream(t *testing.T, messageID int64) string {
	t.Helper()
	lines, err := b.store.ListHistory(context.Background(), messageID)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := persistence.DownstreamStatus(lines)
	return d.Status
}
