package receiver

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

func TestFailureDisposition(t *testing.T) {
	tests := []struct {
		err    error
		layers []mime.Layer
		want   string
	}{
		{fmt.Errorf("x: %w", cms.ErrDecryption), nil, "decryption-failed"},
		{fmt.Errorf("x: %w: %w", cms.ErrDecryption, cms.ErrMalformed), []mime.Layer{mime.LayerEncrypted}, "decryption-failed"},
		{cms.ErrAuthentication, nil, "authentication-failed"},
		{&cms.CertificateValidityError{}, nil, "authentication-failed"},
		{cms.ErrIntegrity, nil, "integrity-check-failed"},
		{&cms.DecompressionLimitError{Limit: 1}, nil, "decompression-failed"},
		{fmt.Errorf("sha-1: %w", cms.ErrInsufficientSecurity), nil, "insufficient-message-security"},
		{errReplay, nil, "duplicate-document"},
		{errDuplicateFilename, nil, "duplicate-filename"},
		{cms.ErrUnsupportedAlgorithm, []mime.Layer{mime.LayerEncrypted}, "decryption-failed"},
		{cms.ErrUnsupportedAlgorithm, []mime.Layer{mime.LayerEncrypted, mime.LayerSigned}, "authentication-failed"},
		{cms.ErrUnsupportedAlgorithm, nil, "unexpected-processing-error"},
		{mime.ErrMalformed, []mime.Layer{mime.LayerEncrypted}, "unexpected-processing-error"},
		{errors.New("anything else"), nil, "unexpected-processing-error"},
	}
	for _, tt := range tests {
		got := failureDisposition(tt.err, tt.layers)
		if want := "automatic-action/MDN-sent-automatically; processed/error: " + tt.want; got.String() != want {
			t.Errorf("%v %v: %s, want %s", tt.err, tt.layers, got, want)
		}
	}
}

func TestCheckAsyncURL(t *testing.T) {
	remote := profile.NewRemote()
	remote.EndpointURL = "https://as2.acme.example:8443/as2"
	remote.AsyncMDNHosts = []string{"mdn.acme.example", "relay.acme.example:9000"}
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://as2.acme.example:8443/mdn", true},
		{"http://AS2.acme.example/mdn", true},
		{"https://mdn.acme.example/x", true},
		{"http://relay.acme.example:9000/x", true},
		{"http://relay.acme.example:9001/x", false},
		{"http://attacker.example/mdn", false},
		{"http://acme.example/mdn", false},
		{"mailto:edi@acme.example", false},
		{"https://user:pw@mdn.acme.example/", false},
		{"not a url", false},
	}
	for _, tt := range tests {
		_, err := checkAsyncURL(tt.url, remote)
		if (err == nil) != tt.ok {
			t.Errorf("%s: %v", tt.url, err)
		}
	}
	// A host the profile does not vouch for is named, with the field that would admit it.
	_, err := checkAsyncURL("http://localhost:10080/mdn", remote)
	for _, want := range []string{`host "localhost"`, "async_mdn_hosts", "endpoint URL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal of localhost = %v, want it to say %s", err, want)
		}
	}
}

func TestReadEnvelope(t *testing.T) {
	base := func() http.Header {
		h := http.Header{}
		h.Set("AS2-From", `"ACME CORP"`)
		h.Set("AS2-To", "WHARF")
		h.Set("Message-ID", " <1@acme> ")
		return h
	}
	e, err := readEnvelope(base(), 10)
	if err != nil || e.from != "ACME CORP" || e.to != "WHARF" || e.messageID != "<1@acme>" || e.version != "1.0" || e.mode != MDNNone {
		t.Fatalf("%+v, %v", e, err)
	}
	h := base()
	h.Set("Disposition-Notification-To", "x@acme")
	h.Set("Receipt-Delivery-Option", "https://acme.example/mdn")
	h.Set("AS2-Version", "1.3")
	if e, err := readEnvelope(h, 10); err != nil || e.mode != MDNAsync || e.asyncURL != "https://acme.example/mdn" {
		t.Errorf("%+v, %v", e, err)
	}
	for name, change := range map[string]func(http.Header){
		"unterminated quote": func(h http.Header) { h.Set("AS2-From", `"ACME"CORP"`) },
		"control character":  func(h http.Header) { h.Set("AS2-To", "WH\x01ARF") },
		"too long":           func(h http.Header) { h.Set("AS2-To", strings.Repeat("W", 129)) },
		"message id":         func(h http.Header) { h.Set("Message-ID", "<\x7f@x>") },
		"version":            func(h http.Header) { h.Set("AS2-Version", "1.4") },
	} {
		h := base()
		change(h)
		var he *headerError
		if _, err := readEnvelope(h, 10); !errors.As(err, &he) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Header fields are matched in any case, folded lines are joined, and a quoted AS2 id
// with a space is read.
func TestHeaderTolerance(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	partner.id = "ACME CORP"
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		rc := b.start("as2_in", dir, nil)
		r := build(t, partner, org, []byte("tolerant\r\n"), "t.txt", secureOpts(partner, org))
		fields := [][2]string{
			{"content-type", r.contentType},
			{"as2-from", "\"ACME\r\n CORP\""},
			{"AS2-TO", string(org.id)},
			{"message-id", r.header.Get("Message-ID")},
			{"disposition-notification-to", "edi@acme.example"},
			{"DISPOSITION-NOTIFICATION-OPTIONS", "signed-receipt-protocol=optional,\r\n\tpkcs7-signature; signed-receipt-micalg=optional, sha-256"},
		}
		a := rawPost(t, rc.Addr().String(), rc.cfg.Path, fields, r.body, 1000)
		m := parseMDN(t, a, org.cert)
		if !m.Signed || !m.Disposition.Successful() || a.header.Get("AS2-To") != `"ACME CORP"` {
			t.Errorf("MDN signed %v, %s, AS2-To %q", m.Signed, m.Disposition, a.header.Get("AS2-To"))
		}
		if b.messageCount() != 1 {
			t.Errorf("%d messages", b.messageCount())
		}
	})
}

// Past max_concurrent_requests a request waits for a slot, as one of at most as many
// waiters as there are slots; one that gets none in time, or finds the waiters full, is
// answered 503 with Retry-After before its body is read.
func TestBusy(t *testing.T) {
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		n := 0
		doc := func() request {
			n++
			return build(t, partner, org, []byte(fmt.Sprintf("doc %d\r\n", n)), fmt.Sprintf("%d.txt", n), secureOpts(partner, org))
		}
		// hold sends a request's header and part of its body, so it keeps the one slot
		// until finish sends the rest and reads its MDN.
		hold := func(rc *Receiver) (finish func()) {
			r := doc()
			conn, err := net.Dial("tcp", rc.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			var head bytes.Buffer
			fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: x\r\n", rc.cfg.Path)
			for _, f := range fieldsOf(r) {
				fmt.Fprintf(&head, "%s: %s\r\n", f[0], f[1])
			}
			fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", len(r.body))
			head.Write(r.body[:10])
			if _, err := conn.Write(head.Bytes()); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the slow request holding the slot", func() bool { return len(rc.slots) == 1 })
			return func() {
				defer conn.Close()
				if _, err := conn.Write(r.body[10:]); err != nil {
					t.Fatal(err)
				}
				if m := parseMDN(t, readAnswer(t, conn), org.cert); !m.Disposition.Successful() {
					t.Errorf("slow request: %s", m.Disposition)
				}
			}
		}
		// wait posts a request that has to wait for the slot; answer gives its reply.
		wait := func(rc *Receiver) (answer func() reply) {
			r := doc()
			type result struct {
				reply
				err error
			}
			got := make(chan result, 1)
			go func() {
				a, err := send(rc.url(), r.contentType, r.header, r.body)
				got <- result{a, err}
			}()
			eventually(t, "the request waiting for a slot", func() bool { return len(rc.waiters) == 1 })
			return func() reply {
				res := <-got
				if res.err != nil {
					t.Fatal(res.err)
				}
				return res.reply
			}
		}
		refused := func(a reply) {
			t.Helper()
			if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
				t.Errorf("HTTP %d, Retry-After %q, want 503 with Retry-After", a.status, a.header.Get("Retry-After"))
			}
		}
		served := func(a reply) {
			t.Helper()
			if a.status != http.StatusOK {
				t.Fatalf("HTTP %d: %s", a.status, a.body)
			}
			if m := parseMDN(t, a, org.cert); !m.Disposition.Successful() {
				t.Errorf("waiting request: %s", m.Disposition)
			}
		}
		start := func(name string, queueWait time.Duration) *Receiver {
			return b.start(name, dir, func(c *Config, _ *Deps) { c.MaxConcurrentRequests = 1 },
				func(rc *Receiver) { rc.queueWait = queueWait })
		}

		t.Run("waits for the slot", func(t *testing.T) {
			rc := start("as2_wait", time.Minute)
			before := b.messageCount()
			finish := hold(rc)
			answer := wait(rc)
			finish()
			served(answer())
			if stored := b.messageCount() - before; stored != 2 {
				t.Errorf("%d messages stored, want 2", stored)
			}
		})
		t.Run("refused after the wait", func(t *testing.T) {
			rc := start("as2_timeout", 50*time.Millisecond)
			before := b.messageCount()
			finish := hold(rc)
			r := doc()
			refused(post(t, rc.url(), r.contentType, r.header, r.body))
			finish()
			if stored := b.messageCount() - before; stored != 1 {
				t.Errorf("%d messages stored, want 1", stored)
			}
		})
		t.Run("refused at once when the waiters are full", func(t *testing.T) {
			rc := start("as2_full", time.Minute)
			before := b.messageCount()
			finish := hold(rc)
			answer := wait(rc)
			r := doc()
			refused(post(t, rc.url(), r.contentType, r.header, r.body))
			finish()
			served(answer())
			if stored := b.messageCount() - before; stored != 2 {
				t.Errorf("%d messages stored, want 2", stored)
			}
		})
	})
}

// intake is an MDNIntake answering with err.
type intake struct {
	err  error
	got  []byte
	kind string
}

func (i *intake) AcceptMDN(_ context.Context, contentType string, _ http.Header, body []byte) error {
	i.got, i.kind = body, contentType
	return i.err
}

func TestMDNPath(t *testing.T) {
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, nil, nil)
		none := b.start("as2_none", newDirectory(), nil)
		if a := post(t, "http://"+none.Addr().String()+"/as2/mdn", "multipart/report", nil, []byte("x")); a.status != http.StatusNotFound {
			t.Errorf("without intake: HTTP %d", a.status)
		}
		in := &intake{}
		errInvalid := errors.New("invalid MDN")
		rc := b.start("as2_in", newDirectory(), func(_ *Config, d *Deps) {
			d.MDNIntake = in
			d.MDNFaults = []error{errInvalid}
		})
		url := "http://" + rc.Addr().String() + "/as2/mdn"
		tests := []struct {
			err    error
			status int
		}{
			{nil, http.StatusOK},
			{fmt.Errorf("no message <x>: %w", persistence.ErrNotFound), http.StatusNotFound},
			{fmt.Errorf("already settled: %w", persistence.ErrConflict), http.StatusConflict},
			{fmt.Errorf("MDN signature: %w", cms.ErrAuthentication), http.StatusBadRequest},
			{fmt.Errorf("%w: no report", mime.ErrNotMDN), http.StatusBadRequest},
			{fmt.Errorf("%w: unsigned", errInvalid), http.StatusBadRequest},
			{errors.New("database is down at 10.0.0.5"), http.StatusInternalServerError},
		}
		for _, tt := range tests {
			in.err = tt.err
			a := post(t, url, "multipart/report; boundary=x", nil, []byte("the MDN"))
			if a.status != tt.status {
				t.Errorf("%v: HTTP %d, want %d", tt.err, a.status, tt.status)
			}
			if string(in.got) != "the MDN" || in.kind != "multipart/report; boundary=x" {
				t.Errorf("intake got %q (%q)", in.got, in.kind)
			}
			if bytes.Contains(a.body, []byte("10.0.0.5")) {
				t.Errorf("a 500 tells internals: %s", a.body)
			}
		}
		if a := post(t, url, "multipart/report", nil, make([]byte, maxMDNBody+1)); a.status != http.StatusRequestEntityTooLarge {
			t.Errorf("large MDN: HTTP %d", a.status)
		}
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET: HTTP %d", resp.StatusCode)
		}
	})
}

// certs is a module.Certificates holding one certificate with its key.
type certs struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func (c certs) Signer(_ context.Context, id int64) (*x509.Certificate, crypto.Signer, error) {
	if id != 7 {
		return nil, nil, persistence.ErrNotFound
	}
	return c.cert, c.key, nil
}

func (c certs) Decrypter(context.Context, int64) (*x509.Certificate, crypto.Decrypter, error) {
	return nil, nil, errors.ErrUnsupported
}

// serverCert makes a self-signed server certificate for 127.0.0.1.
func serverCert(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "as2.wharf.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// A size limit of the profile bounds the body; without one the config's applies.
func TestSizeLimit(t *testing.T) {
	rc := &Receiver{cfg: Config{MaxBodyMiB: 3}}
	for _, tt := range []struct {
		local, remote int
		want          int64
	}{{0, 0, 3 << 20}, {5, 0, 5 << 20}, {0, 7, 7 << 20}, {5, 2, 2 << 20}, {1, 9, 1 << 20}} {
		in := profile.Inbound{}
		in.Local.MaxMessageSizeMiB, in.Remote.MaxMessageSizeMiB = tt.local, tt.remote
		if got := rc.sizeLimit(in); got != tt.want {
			t.Errorf("%d/%d: %d, want %d", tt.local, tt.remote, got, tt.want)
		}
	}
	// The refusal names the limit and the setting it comes from.
	for _, tt := range []struct {
		local, remote int
		size          int64
		want          string
	}{
		{0, 0, 0, "the message is larger than the limit of 3 MiB accepted from this partner (max_body_mib of the receiver)"},
		{5, 2, 4 << 20, "the message of 4194304 bytes is larger than the limit of 2 MiB accepted from this partner (max_message_size_mib of the partner's AS2 profile)"},
		{1, 9, 0, "the message is larger than the limit of 1 MiB accepted from this partner (max_message_size_mib of our AS2 profile)"},
	} {
		in := profile.Inbound{}
		in.Local.MaxMessageSizeMiB, in.Remote.MaxMessageSizeMiB = tt.local, tt.remote
		if got := rc.tooLargeText(in, tt.size); got != tt.want {
			t.Errorf("%d/%d: %q\nwant %q", tt.local, tt.remote, got, tt.want)
		}
	}
}

func TestFileNameFromMessageID(t *testing.T) {
	for id, want := range map[string]string{
		"<20261130092538+0000-680692-peera_gogw>": "20261130092538_0000-680692-peera_gogw",
		"<1.2@host>":   "1.2_host",
		"<../../etc>":  "etc",
		"<>":           "as2-message",
		"<a/b\\c:d*e>": "a_b_c_d_e",
	} {
		got := fileNameFromMessageID(id)
		if string(got) != want {
			t.Errorf("%q: %q, want %q", id, got, want)
		}
		if _, err := persistence.ParseFileName(string(got)); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
}
