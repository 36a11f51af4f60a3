package ui

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"wharf/internal/dispatch"
	"wharf/internal/persistence"
	"wharf/internal/settings"
	"wharf/internal/storage"
)

type nopWaker struct{}

func (nopWaker) Wake([]persistence.InstanceName) {}

// sendBundle is setupAccounts with the real dispatcher as the UI's ingester, over a local
// payload store, and the routing records of seedRouting.
type sendBundle struct {
	*accountsBundle
	blobs *storage.Local
}

func setupSend(t *testing.T) *sendBundle {
	t.Helper()
	withIngest, blobs := ingestDeps(t)
	ab := setupAccounts(t, withIngest)
	ab.seedRouting(t)
	return &sendBundle{accountsBundle: ab, blobs: blobs}
}

// ingestDeps gives the UI the real dispatcher as its ingester, over a local payload store.
func ingestDeps(t *testing.T) (func(*Deps), *storage.Local) {
	t.Helper()
	blobs, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return func(d *Deps) {
		d.Payloads = blobs
		d.Ingest = dispatch.New(d.Store, blobs, nopWaker{}, slog.New(slog.DiscardHandler))
	}, blobs
}

// postFile posts the send form as a browser does: multipart, with the CSRF token as a
// field and the document as the part "file" named fileName.
func (sb *sendBundle) postFile(t *testing.T, fields url.Values, fileName string, doc []byte) response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("csrf_token", sb.csrf)
	for k, vs := range fields {
		for _, v := range vs {
			_ = mw.WriteField(k, v)
		}
	}
	if doc != nil {
		fw, err := mw.CreateFormFile("file", fileName)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(doc)
	}
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, sb.srv.URL+"/ui/send", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := sb.c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	sb.c.seen = append(sb.c.seen, string(data))
	return response{status: res.StatusCode, header: res.Header, body: string(data)}
}

var messageLocationRE = regexp.MustCompile(`^/ui/messages/(\d+)$`)

// payloadOf reads the unpacked payload of the message the send redirected to.
func (sb *sendBundle) payloadOf(t *testing.T, r response) (persistence.Message, []byte) {
	t.Helper()
	m := messageLocationRE.FindStringSubmatch(r.header.Get("Location"))
	if r.status != http.StatusSeeOther || m == nil {
		t.Fatalf("send = %d to %q, want 303 to a message\n%s", r.status, r.header.Get("Location"), r.body)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	ctx := context.Background()
	msg, err := sb.store.GetMessage(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	payloads, err := sb.store.ListPayloads(ctx, id)
	if err != nil || len(payloads) != 1 {
		t.Fatalf("payloads of message %d = %+v, %v", id, payloads, err)
	}
	rc, err := sb.blobs.Open(ctx, payloads[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return msg, data
}

func TestSendByHand(t *testing.T) {
	sb := setupSend(t)
	ctx := context.Background()
	form := sb.get(t, "/ui/send", http.StatusOK)
	for _, want := range []string{`enctype="multipart/form-data"`, `id="from" name="from"`, `id="to" name="to"`,
		`id="file" name="file" type="file"`, `id="file_name" name="file_name"`, `<option value="inbox"`, `<option value="outbox"`,
		`<option value="local">`, `<option value="acme">`} {
		if !strings.Contains(form, want) {
			t.Errorf("send form lacks %s", want)
		}
	}

	// Larger than the UI's 64 KiB form limit, with bytes no text field would carry.
	doc := bytes.Repeat([]byte("UNB+UNOC:3\x00\xff\r\n"), 10_000)
	r := sb.postFile(t, url.Values{"from": {"local"}, "to": {"acme"}, "target": {"inbox"}}, "order.edi", doc)
	msg, got := sb.payloadOf(t, r)
	if !bytes.Equal(got, doc) {
		t.Errorf("stored payload is %d bytes, differs from the %d uploaded", len(got), len(doc))
	}
	if msg.From != "local" || msg.To != "acme" || msg.OriginalFileName != "order.edi" {
		t.Errorf("message = %+v", msg)
	}
	if ds, err := sb.store.ListDeliveries(ctx, msg.ID); err != nil || len(ds) != 1 || ds[0].Target != "inbox" {
		t.Errorf("deliveries = %+v, %v; want one to inbox", ds, err)
	}
	if body := sb.get(t, r.header.Get("Location"), http.StatusOK); !strings.Contains(body, "order.edi") {
		t.Errorf("the message page does not show the message:\n%s", body)
	}

	// Routed by a source, under a file name typed in the form.
	if _, err := sb.store.CreateRoute(ctx, persistence.Route{Source: "outbox", From: "*", To: "acme", Target: "archive"}); err != nil {
		t.Fatal(err)
	}
	r = sb.postFile(t, url.Values{"from": {"local"}, "to": {"acme"}, "source": {"outbox"}, "file_name": {"renamed.txt"}}, "x.bin", []byte("hello"))
	msg, got = sb.payloadOf(t, r)
	if string(got) != "hello" || msg.OriginalFileName != "renamed.txt" || msg.Source != "outbox" {
		t.Errorf("routed message = %+v with %q", msg, got)
	}
	if ds, _ := sb.store.ListDeliveries(ctx, msg.ID); len(ds) != 1 || ds[0].Target != "archive" {
		t.Errorf("routed deliveries = %+v, want one to archive", ds)
	}
}

func TestSendRefused(t *testing.T) {
	sb := setupSend(t)
	ok := url.Values{"from": {"local"}, "to": {"acme"}, "target": {"inbox"}}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for kk, vv := range ok {
			f[kk] = vv
		}
		f.Set(k, v)
		return f
	}
	for _, tt := range []struct {
		name   string
		fields url.Values
		doc    []byte
		field  string
		kept   string
	}{
		{"no file", ok, nil, "file", `value="acme"`},
		{"empty file", ok, []byte{}, "file", `value="acme"`},
		{"unknown party", with("to", "nobody"), []byte("x"), "to", `value="nobody"`},
		{"bad party name", with("from", "Not Valid"), []byte("x"), "from", `value="Not Valid"`},
		{"no target or source", with("target", ""), []byte("x"), "target", `value="acme"`},
		{"source as target", with("target", "outbox"), []byte("x"), "target", `value="acme"`},
		{"bad file name", with("file_name", "../etc/passwd"), []byte("x"), "file_name", `value="../etc/passwd"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := sb.postFile(t, tt.fields, "doc.txt", tt.doc)
			if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="`+tt.field+`-error"`) {
				t.Fatalf("send = %d, want 422 with an error at %s\n%s", r.status, tt.field, r.body)
			}
			if !strings.Contains(r.body, tt.kept) {
				t.Errorf("the refused form lost %s", tt.kept)
			}
		})
	}
	if _, total, _ := sb.store.ListMessages(context.Background(), persistence.MessageFilter{}); total != 0 {
		t.Errorf("refused sends stored %d messages", total)
	}
}

// TestSendUploadLimit holds the send form to the max_upload_mib setting, as REST's send.
func TestSendUploadLimit(t *testing.T) {
	sb := setupSend(t)
	if err := sb.store.PutSetting(context.Background(), settings.MaxUploadMiB, "1"); err != nil {
		t.Fatal(err)
	}
	fields := url.Values{"from": {"local"}, "to": {"acme"}, "target": {"inbox"}}
	if r := sb.postFile(t, fields, "big.bin", make([]byte, 1<<20+1)); r.status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.body, "larger than the limit of 1 MiB") {
		t.Errorf("just over the limit = %d, want 422 with the limit\n%s", r.status, r.body)
	}
	if r := sb.postFile(t, fields, "huge.bin", make([]byte, 2<<20)); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("far over the limit = %d, want 413", r.status)
	}
	sb.payloadOf(t, sb.postFile(t, fields, "fits.bin", make([]byte, 1<<20)))
}

func TestSendUnavailable(t *testing.T) {
	ab := setupAccounts(t, nil)
	if body := ab.get(t, "/ui/send", http.StatusOK); !strings.Contains(body, "not available") {
		t.Errorf("send page without an ingester:\n%s", body)
	}
	sb := &sendBundle{accountsBundle: ab}
	if r := sb.postFile(t, url.Values{"from": {"a"}, "to": {"b"}}, "x", []byte("x")); r.status != http.StatusServiceUnavailable {
		t.Errorf("send without an ingester = %d, want 503", r.status)
	}
}

// The send form picks parties from lists, named and grouped, and chooses for the operator
// where there is only one sensible choice.
func TestSendFormPicksParties(t *testing.T) {
	sb := setupSend(t)
	form := sb.get(t, "/ui/send", http.StatusOK)
	for _, want := range []string{
		`<select id="from" name="from" required`, `<select id="to" name="to" required`,
		`<optgroup label="Our organizations"><option value="local" selected>Us (local)</option>`,
		`<optgroup label="Partners"><option value="acme" selected>ACME Corp (acme)</option>`,
	} {
		if !strings.Contains(form, want) {
			t.Errorf("send form lacks %s\n%s", want, form)
		}
	}
	if strings.Contains(form, `type="text" required maxlength="64"`) {
		t.Error("a party is still typed")
	}
	// Two targets: none is chosen for the operator.
	if strings.Contains(form, `<option value="inbox" selected>`) || strings.Contains(form, `<option value="archive" selected>`) {
		t.Error("a target is chosen among two")
	}
	// With one organization more, From is left to the operator; To stays chosen.
	if _, err := sb.store.CreateParty(context.Background(), persistence.Party{Kind: persistence.PartyOrganization, Name: "second"}); err != nil {
		t.Fatal(err)
	}
	form = sb.get(t, "/ui/send", http.StatusOK)
	if strings.Contains(form, `<option value="local" selected>`) || !strings.Contains(form, `<option value="acme" selected>`) ||
		!strings.Contains(form, `<option value="second">second</option>`) {
		t.Errorf("with two organizations:\n%s", form)
	}
}
