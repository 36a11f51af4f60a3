package receiver

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/dispatch"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
	"wharf/internal/storage"
)

// Fuzz targets for what reaches the receiver from the network: the AS2 header fields,
// and whole requests through its HTTP handler. Their seeds (the interop corpus) run in
// every go test; scripts/fuzz.sh runs them as fuzzers.

// FuzzReadEnvelope reads AS2 header fields. What it accepts is consistent: ids that
// quote back to themselves, a printable Message-ID, a known version and MDN mode.
func FuzzReadEnvelope(f *testing.F) {
	dir, cases := loadCorpus(f)
	for _, c := range cases {
		if c.Group != "inbound" {
			continue
		}
		h := as2test.CorpusHeader(f, dir, c.Files["request_headers"])
		f.Add(h.Get("Message-Id"), h.Get("AS2-From"), h.Get("AS2-To"), h.Get("AS2-Version"),
			h.Get("Disposition-Notification-To"), h.Get("Disposition-Notification-Options"), h.Get("Receipt-Delivery-Option"))
	}
	f.Add("<a@b>", `"WHARF \"ORG\""`, `"a\\b"`, "1.3", "x", "signed-receipt-protocol=required,pkcs7-signature; signed-receipt-micalg=required,sha-512,sha1", "")
	f.Add("<a@b>", `"`, `""`, "2.0", "", ";;=,", "http://127.0.0.1/mdn")
	f.Fuzz(func(t *testing.T, messageID, from, to, version, dnt, dno, rdo string) {
		h := http.Header{}
		for k, v := range map[string]string{"Message-Id": messageID, "AS2-From": from, "AS2-To": to, "AS2-Version": version,
			"Disposition-Notification-To": dnt, "Disposition-Notification-Options": dno, "Receipt-Delivery-Option": rdo} {
			if v != "" {
				h.Set(k, v)
			}
		}
		e, err := readEnvelope(h, -1)
		if err != nil {
			if _, ok := err.(*headerError); !ok {
				t.Fatalf("error %v is not a header error", err)
			}
			return
		}
		if !printable(e.messageID) || e.messageID == "" {
			t.Fatalf("Message-ID %q accepted", e.messageID)
		}
		for _, id := range []profile.AS2ID{e.from, e.to} {
			again, err := parseAS2ID("AS2-From", quoteAS2ID(string(id)))
			if err != nil || again != id {
				t.Fatalf("AS2 id %q quotes as %q, which reads as %q (%v)", id, quoteAS2ID(string(id)), again, err)
			}
		}
		if e.from == e.to {
			t.Fatalf("AS2-From and AS2-To are both %q", e.from)
		}
		switch e.version {
		case "1.0", "1.1", "1.2", "1.3":
		default:
			t.Fatalf("version %q accepted", e.version)
		}
		if (e.mode == MDNAsync) != (e.asyncURL != "") || e.mode != MDNNone && strings.TrimSpace(dnt) == "" {
			t.Fatalf("MDN mode %s with async URL %q from %q", e.mode, e.asyncURL, dnt)
		}
	})
}

// fuzzGateway is a receiver on SQLite for the corpus's parties: gogw receives from
// peera under a relaxed profile and from peerb under the secure defaults.
type fuzzGateway struct {
	rc      http.Handler
	tempDir string
	ours    *x509.Certificate
}

func startFuzzGateway(f *testing.F, dir string) *fuzzGateway {
	f.Helper()
	ctx := context.Background()
	s := dbtest.OpenModules(f, "sqlite", schema())
	blobs, err := storage.NewLocal(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cert := as2test.PEMCertificate(f, as2test.CorpusFile(f, dir, "keys/gogw.crt"))
	key := as2test.PEMPrivateKey(f, as2test.CorpusFile(f, dir, "keys/gogw.key"))
	org := party{id: "gogw", name: "gogw", cert: cert, key: key}
	directory := newDirectory()
	for _, p := range []persistence.Party{{Kind: persistence.PartyOrganization, Name: "gogw"},
		{Kind: persistence.PartyPartner, Name: "peera"}, {Kind: persistence.PartyPartner, Name: "peerb"}} {
		p.DisplayName = string(p.Name)
		if _, err := s.CreateParty(ctx, p); err != nil {
			f.Fatal(err)
		}
	}
	for _, name := range []string{"peera", "peerb"} {
		partner := party{id: profile.AS2ID(name), name: persistence.PartyName(name),
			cert: as2test.PEMCertificate(f, as2test.CorpusFile(f, dir, "keys/"+name+".crt"))}
		change := relaxed
		if name == "peerb" {
			change = nil
		}
		directory.add(inbound(org, partner, change))
	}
	cfg := newConfig()
	cfg.Port = 0
	tempDir := filepath.Join(f.TempDir(), "tmp")
	rc, err := newReceiver(Deps{Directory: directory, DB: s.ModuleSQL(), Ingest: dispatch.New(s, blobs, nopWaker{}, log),
		Blobs: blobs, Store: s, Logger: log, BaseURL: "http://127.0.0.1:8080", TempDir: tempDir}, "as2_fuzz", cfg)
	if err != nil {
		f.Fatal(err)
	}
	if err := rc.Start(ctx); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rc.Stop(ctx)
	})
	return &fuzzGateway{rc: rc.Handler(), tempDir: tempDir, ours: cert}
}

// FuzzReceiveMessage sends whole AS2 requests through the receiver's handler. Every one
// is answered: with an MDN that reads and names the request's Message-ID, or with a
// refusal of the request (4xx) — never a server error — and leaves no spooled file.
func FuzzReceiveMessage(f *testing.F) {
	dir, cases := loadCorpus(f)
	for _, c := range cases {
		if c.Group != "inbound" {
			continue
		}
		body := as2test.CorpusFile(f, dir, c.Files["request_body"])
		if len(body) > 64<<10 {
			continue
		}
		h := as2test.CorpusHeader(f, dir, c.Files["request_headers"])
		f.Add(h.Get("AS2-From"), h.Get("Content-Type"), h.Get("Content-Transfer-Encoding"), h.Get("Disposition-Notification-Options"), body)
	}
	f.Add("peera", "application/edi-x12", "base64", "", []byte("QQ"))
	f.Add("peerb", "application/pkcs7-mime; smime-type=compressed-data", "base64", "", []byte("QQ"))
	gw := startFuzzGateway(f, dir)
	var seq atomic.Int64
	f.Fuzz(func(t *testing.T, from, contentType, cte, options string, body []byte) {
		messageID := fmt.Sprintf("<fuzz-%d-%d@partner.test>", os.Getpid(), seq.Add(1))
		send := func() *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/as2", strings.NewReader(string(body)))
			for k, v := range map[string]string{"AS2-From": from, "AS2-To": "gogw", "AS2-Version": "1.2", "Message-Id": messageID,
				"Content-Type": contentType, "Content-Transfer-Encoding": cte, "Disposition-Notification-To": "as2@partner.test",
				"Disposition-Notification-Options": options} {
				if v != "" && !strings.ContainsAny(v, "\r\n\x00") {
					req.Header.Set(k, v)
				}
			}
			w := httptest.NewRecorder()
			gw.rc.ServeHTTP(w, req)
			return w
		}
		// A 503 asks the partner to send again (the database was busy on a loaded
		// machine); a message the receiver can never take must not get it every time.
		w := send()
		for try := 1; w.Code == http.StatusServiceUnavailable && try < 3; try++ {
			w = send()
		}
		switch code := w.Code; {
		case code == http.StatusOK:
			m, err := mime.ParseMDN(w.Header().Get("Content-Type"), w.Body.Bytes(),
				mime.MDNParseOptions{PartnerCertificates: []*x509.Certificate{gw.ours}})
			if err != nil {
				t.Fatalf("the MDN does not read: %v\n%s", err, w.Body.Bytes())
			}
			if m.OriginalMessageID != messageID {
				t.Fatalf("the MDN answers %q, not %q", m.OriginalMessageID, messageID)
			}
		case code >= 400 && code < 500:
		default:
			t.Fatalf("answered %d: %s", code, w.Body.Bytes())
		}
		if left, err := os.ReadDir(gw.tempDir); err == nil && len(left) > 0 {
			t.Fatalf("%d files left in the temporary directory, e.g. %s", len(left), left[0].Name())
		}
	})
}
