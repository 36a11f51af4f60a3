package receiver

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

type corpusCase struct {
	ID                string            `json:"id"`
	Group             string            `json:"group"`
	Product           string            `json:"product"`
	AS2From           string            `json:"as2_from"`
	MessageID         string            `json:"message_id"`
	SenderCertificate string            `json:"sender_certificate"`
	Files             map[string]string `json:"files"`
	Request           struct {
		Framing struct {
			Framing string `json:"framing"`
		} `json:"framing"`
	} `json:"request"`
	LayerDetails []struct {
		Layer           string `json:"layer"`
		DigestAlgorithm string `json:"digest_algorithm"`
	} `json:"layer_details"`
	Expected struct {
		Signed       bool     `json:"signed"`
		Encrypted    bool     `json:"encrypted"`
		Compressed   bool     `json:"compressed"`
		Layers       []string `json:"layers"`
		Filename     *string  `json:"filename"`
		Cipher       string   `json:"cipher"`
		MIC          string   `json:"mic"`
		MICAlgorithm string   `json:"mic_algorithm"`
		MDNRequested string   `json:"mdn_requested"`
		// MICAlgorithmConflict is set where the signature's digest and the requested
		// algorithm differ (oa-14, py-14).
		MICAlgorithmConflict *struct {
			ThisPeerRequires string `json:"this_peer_requires"`
		} `json:"mic_algorithm_conflict"`
		// KeyTransport and SignatureAlgorithm say when parameters are absent.
		KeyTransport       string `json:"key_transport"`
		SignatureAlgorithm string `json:"signature_algorithm"`
	} `json:"expected"`
}

// weak reports a case a profile with the secure defaults refuses: unsigned, unencrypted
// or signed with SHA-1.
func (c corpusCase) weak() bool {
	if !c.Expected.Signed || !c.Expected.Encrypted {
		return true
	}
	return slices.ContainsFunc(c.LayerDetails, func(l struct {
		Layer           string `json:"layer"`
		DigestAlgorithm string `json:"digest_algorithm"`
	}) bool {
		return l.DigestAlgorithm == "sha1"
	})
}

func loadCorpus(t testing.TB) (string, []corpusCase) {
	var cases []corpusCase
	dir := as2test.CorpusCases(t, &cases)
	return dir, cases
}

// requestFields are a case's header fields in arrival order, without those the HTTP
// client frames itself; Receipt-Delivery-Option is pointed at asyncURL.
func requestFields(t testing.TB, dir string, c corpusCase, asyncURL string) [][2]string {
	t.Helper()
	var pairs [][2]string
	if err := json.Unmarshal(as2test.CorpusFile(t, dir, c.Files["request_headers"]), &pairs); err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, p := range pairs {
		switch strings.ToLower(p[0]) {
		case "host", "content-length", "transfer-encoding", "connection", "accept-encoding":
			continue
		case "receipt-delivery-option":
			p[1] = asyncURL
		}
		out = append(out, p)
	}
	return out
}

// mdnListener is a partner's endpoint for asynchronous MDNs.
type mdnListener struct {
	srv   *httptest.Server
	mu    sync.Mutex
	posts map[string][]reply
	// fail answers that many posts to a path with 500 first.
	fail map[string]int
}

func newMDNListener(t testing.TB) *mdnListener {
	l := &mdnListener{posts: map[string][]reply{}, fail: map[string]int{}}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.fail[r.URL.Path] > 0 {
			l.fail[r.URL.Path]--
			http.Error(w, "not now", http.StatusInternalServerError)
			return
		}
		l.posts[r.URL.Path] = append(l.posts[r.URL.Path], reply{status: http.StatusOK, header: r.Header.Clone(), body: body})
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *mdnListener) url(path string) string { return l.srv.URL + path }

// wait returns the n-th MDN posted to path once it arrived.
func (l *mdnListener) wait(t testing.TB, path string, n int) reply {
	t.Helper()
	var a reply
	eventually(t, "asynchronous MDN "+path, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.posts[path]) < n {
			return false
		}
		a = l.posts[path][n-1]
		return true
	})
	return a
}

func (l *mdnListener) count(path string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.posts[path])
}

// checkMDN asserts a processed MDN for the case with its expected MIC.
func checkMDN(t *testing.T, c corpusCase, a reply, org *x509.Certificate, signed bool) {
	t.Helper()
	m := parseMDN(t, a, org)
	if m.Signed != signed {
		t.Errorf("MDN signed = %v, want %v", m.Signed, signed)
	}
	if m.OriginalMessageID != c.MessageID {
		t.Errorf("Original-Message-ID %q, want %q", m.OriginalMessageID, c.MessageID)
	}
	if got := m.Disposition.String(); got != mime.Processed().String() {
		t.Errorf("disposition %q", got)
	}
	wantAlg, err := cms.ParseDigestAlgorithm(c.Expected.MICAlgorithm)
	if err != nil {
		t.Fatal(err)
	}
	if m.ReceivedContentMIC == nil {
		t.Fatalf("no Received-Content-MIC (%q)", m.RawMIC)
	}
	if got := base64.StdEncoding.EncodeToString(m.ReceivedContentMIC.Digest); got != c.Expected.MIC || m.ReceivedContentMIC.Algorithm != wantAlg {
		t.Errorf("MIC %s, want %s, %s", m.RawMIC, c.Expected.MIC, c.Expected.MICAlgorithm)
	}
}

// Every inbound case of the interop corpus, replayed over HTTP with the body held in
// memory and in a file: the payload lands as the unpacked stage with its file name, and
// the MDN carries the expected MIC. With the secure defaults the weak cases are
// refused, with a relaxed profile they are taken. A second replay is a duplicate: the
// same MDN, no second message.
func TestCorpusInbound(t *testing.T) {
	for _, mode := range bodyModes {
		t.Run(mode.name, func(t *testing.T) { testCorpusInbound(t, mode.tune) })
	}
}

func testCorpusInbound(t *testing.T, tune func(*Receiver)) {
	dir, cases := loadCorpus(t)
	gogw := party{id: "gogw", name: "gogw", cert: as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, "keys/gogw.crt")), key: as2test.PEMPrivateKey(t, as2test.CorpusFile(t, dir, "keys/gogw.key"))}
	peera := party{id: "peera", name: "peera", cert: as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, "keys/peera.crt"))}
	peerb := party{id: "peerb", name: "peerb", cert: as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, "keys/peerb.crt"))}
	peerc := party{id: "peerc", name: "peerc", cert: as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, "keys/peerc.crt"))}
	peerd := party{id: "peerd", name: "peerd", cert: as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, "keys/peerd.crt"))}
	// pyas2-lib checks a MIC computed with its signature's digest (see the corpus
	// README), OpenAS2 the one with the requested algorithm: the profiles keep the
	// default, auto, which tells them apart by their requests (oa-14, py-14).

	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{gogw}, []party{peera, peerb, peerc, peerd})
		secureDir, relaxedDir := newDirectory(), newDirectory()
		for _, p := range []party{peera, peerb, peerc, peerd} {
			secureDir.add(inbound(gogw, p, nil))
			relaxedDir.add(inbound(gogw, p, relaxed))
		}
		secure := b.start("as2_secure", secureDir, nil, tune)
		lax := b.start("as2_relaxed", relaxedDir, nil, tune)
		listener := newMDNListener(t)

		n := 0
		for _, c := range cases {
			if c.Group != "inbound" {
				continue
			}
			n++
			name := filepath.Base(c.ID)
			t.Run(name, func(t *testing.T) {
				mdnPath := "/mdn/" + name
				fields := requestFields(t, dir, c, listener.url(mdnPath))
				body := as2test.CorpusFile(t, dir, c.Files["request_body"])
				chunk := 0
				if c.Request.Framing.Framing == "chunked" {
					chunk = 2048
				}
				send := func(rc *Receiver) reply {
					return rawPost(t, rc.Addr().String(), rc.cfg.Path, fields, body, chunk)
				}

				rc := secure
				if c.weak() {
					before := b.messageCount()
					m := parseMDN(t, send(secure), gogw.cert)
					if got := m.Disposition.String(); got != "automatic-action/MDN-sent-automatically; processed/error: insufficient-message-security" {
						t.Errorf("secure profile: disposition %q", got)
					}
					if m.ReceivedContentMIC != nil {
						t.Errorf("a refusal carries a MIC: %s", m.RawMIC)
					}
					if got := b.messageCount(); got != before || b.inboundRows(c.MessageID) != 0 {
						t.Fatalf("secure profile stored something: %d messages, was %d", got, before)
					}
					if lines := b.logs.lines("as2_message_id", c.MessageID); len(lines) != 1 {
						t.Errorf("%d log lines about the refusal, want 1", len(lines))
					}
					rc = lax
				}

				before := b.messageCount()
				first := send(rc)
				switch c.Expected.MDNRequested {
				case "sync-signed", "sync-unsigned":
					checkMDN(t, c, first, gogw.cert, c.Expected.MDNRequested == "sync-signed")
				case "async-signed":
					if first.status != http.StatusOK {
						t.Fatalf("HTTP %d: %s", first.status, first.body)
					}
					a := listener.wait(t, mdnPath, 1)
					checkMDN(t, c, a, gogw.cert, true)
					if got := a.header.Get("AS2-To"); got != c.AS2From {
						t.Errorf("async MDN AS2-To %q", got)
					}
				case "none":
					if first.status != http.StatusOK || bytes.Contains(first.body, []byte("disposition")) {
						t.Fatalf("HTTP %d: %s", first.status, first.body)
					}
				default:
					t.Fatalf("MDN kind %q", c.Expected.MDNRequested)
				}

				if got := b.messageCount(); got != before+1 {
					t.Fatalf("%d messages, want %d", got, before+1)
				}
				msg := b.message(string(rc.name), c.MessageID)
				if want := as2test.CorpusFile(t, dir, c.Files["payload"]); !bytes.Equal(b.payload(msg.ID, persistence.PayloadUnpacked), want) {
					t.Errorf("unpacked stage differs from payload.bin")
				}
				if !bytes.Equal(b.payload(msg.ID, persistence.PayloadReceived), body) {
					t.Errorf("received stage differs from the request body")
				}
				if h := b.payload(msg.ID, persistence.PayloadHeaders); !bytes.Contains(h, []byte("As2-From: ")) {
					t.Errorf("headers stage:\n%s", h)
				}
				wantName := string(fileNameFromMessageID(c.MessageID))
				if c.Expected.Filename != nil {
					wantName = *c.Expected.Filename
				}
				if string(msg.OriginalFileName) != wantName {
					t.Errorf("file name %q, want %q", msg.OriginalFileName, wantName)
				}
				if wantFrom := persistence.PartyName(c.AS2From); msg.From != wantFrom || msg.To != "gogw" || msg.CorrelationID != c.MessageID || msg.OriginEventID != c.MessageID {
					t.Errorf("message %+v", msg)
				}
				if c.Expected.MDNRequested != "none" {
					if r := b.payload(msg.ID, persistence.PayloadReceipt); !bytes.Contains(r, []byte("Content-Type: ")) {
						t.Errorf("receipt stage:\n%.200s", r)
					}
				}

				rec, err := FindInbound(b.ctx, b.sql, msg.ID)
				if err != nil {
					t.Fatal(err)
				}
				wantLayers := c.Expected.Layers
				if wantLayers == nil {
					wantLayers = []string{}
				}
				if !slices.Equal(rec.Layers, wantLayers) || rec.Signed != c.Expected.Signed || rec.Encrypted != c.Expected.Encrypted ||
					rec.Compressed != c.Expected.Compressed {
					t.Errorf("record layers %v (%v/%v/%v), want %v", rec.Layers, rec.Signed, rec.Encrypted, rec.Compressed, wantLayers)
				}
				if rec.MIC != c.Expected.MIC || rec.AS2MessageID != c.MessageID || rec.AS2To != "gogw" {
					t.Errorf("record %+v", rec)
				}
				if c.Expected.MDNRequested != "none" && strings.Contains(string(as2test.CorpusFile(t, dir, c.Files["request_headers"])), "signed-receipt-micalg") {
					rule := map[string]string{"OpenAS2": "requested algorithm (auto: OpenAS2 recognised",
						"pyas2-lib": "signature's digest (auto: pyas2-lib recognised"}[c.Product]
					if rule == "" || !strings.HasPrefix(rec.MICRule, rule) {
						t.Errorf("MIC rule %q, want %q", rec.MICRule, rule)
					}
					if conflict := c.Expected.MICAlgorithmConflict != nil; conflict != strings.Contains(rec.MICRule, "signed with") {
						t.Errorf("MIC rule %q, conflict %v", rec.MICRule, conflict)
					}
				}
				corpusCipher := map[string]string{
					"aes128-cbc": "aes-128-cbc ", "aes192-cbc": "aes-192-cbc ", "aes256-cbc": "aes-256-cbc ", "3des-cbc": "des-ede3-cbc ",
				}[rec.Cipher]
				if c.Expected.Encrypted && (corpusCipher == "" || !strings.HasPrefix(c.Expected.Cipher, corpusCipher)) {
					t.Errorf("record cipher %q, want %q", rec.Cipher, c.Expected.Cipher)
				}
				if rec.MDNMode != map[string]string{"sync-signed": "sync", "sync-unsigned": "sync", "async-signed": "async", "none": "none"}[c.Expected.MDNRequested] {
					t.Errorf("record MDN mode %q for %s", rec.MDNMode, c.Expected.MDNRequested)
				}
				if rec.PartnerSoftware == "" && c.Expected.Signed && strings.HasPrefix(name, "oa") {
					t.Errorf("record without the partner's software")
				}
				if want := as2test.CorpusTolerances(c.Expected.KeyTransport, c.Expected.SignatureAlgorithm); !slices.Equal(rec.Tolerances, want) {
					t.Errorf("record tolerances %q, want %q", rec.Tolerances, want)
				}

				// The same request again: a duplicate.
				second := send(rc)
				switch c.Expected.MDNRequested {
				case "sync-signed", "sync-unsigned":
					if second.status != http.StatusOK || !bytes.Equal(second.body, first.body) ||
						second.header.Get("Content-Type") != first.header.Get("Content-Type") ||
						second.header.Get("Message-Id") != first.header.Get("Message-Id") {
						t.Errorf("duplicate answered HTTP %d with another MDN", second.status)
					}
				case "async-signed":
					again := listener.wait(t, mdnPath, 2)
					if a := listener.wait(t, mdnPath, 1); !bytes.Equal(again.body, a.body) {
						t.Errorf("duplicate's asynchronous MDN differs")
					}
				default:
					if second.status != http.StatusOK {
						t.Errorf("duplicate answered HTTP %d", second.status)
					}
				}
				if got := b.messageCount(); got != before+1 {
					t.Errorf("duplicate stored a message: %d, want %d", got, before+1)
				}
				hist, err := b.store.ListHistory(context.Background(), msg.ID)
				if err != nil {
					t.Fatal(err)
				}
				if last := hist[len(hist)-1]; last.Kind != persistence.HistoryDuplicateReceived || !strings.Contains(last.Reason, c.MessageID) {
					t.Errorf("the message's history does not end with the duplicate: %+v", last)
				}
			})
		}
		if n != 36 {
			t.Errorf("%d inbound cases, want 36", n)
		}
	})
}
