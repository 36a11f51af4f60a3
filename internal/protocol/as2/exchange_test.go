package as2_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/gateway"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/telemetry"

	_ "wharf/internal/protocol/as2"
	_ "wharf/internal/protocol/file"
)

// peer is a running gateway in the exchange, driven over its REST API as an operator
// would.
type peer struct {
	t    *testing.T
	g    *gateway.Gateway
	gw   *gatewaytest.Gateway
	name string // its organization's AS2 id
	data string
	as2  string // the receiver's base URL
}

// startPeer starts a gateway with the AS2 id; tel, when given, is its telemetry.
func startPeer(t *testing.T, as2ID, dbURL string, tel ...telemetry.Config) *peer {
	t.Helper()
	// The receiver gets a port of its own before it starts.
	port := gatewaytest.FreePort(t)
	o := gatewaytest.Options{DBURL: dbURL,
		Plugins: map[persistence.InstanceName]map[string]any{"as2_receiver_default": {"port": port}}}
	if len(tel) > 0 {
		o.Telemetry = tel[0]
	}
	gw := gatewaytest.Start(t, o)
	return &peer{t: t, g: gw.Gateway, gw: gw, name: as2ID, data: gw.DataDir, as2: fmt.Sprintf("http://127.0.0.1:%d", port)}
}

// do calls the REST API, fails the test on an answer other than 2xx, and decodes it into
// out.
func (p *peer) do(method, path, contentType string, body io.Reader, out any) int {
	p.t.Helper()
	status, data := p.gw.API(method, path, contentType, body)
	if status/100 != 2 {
		p.t.Fatalf("%s %s: %d %s", method, path, status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			p.t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
	return status
}

func (p *peer) json(method, path string, in, out any) {
	p.t.Helper()
	b, _ := json.Marshal(in)
	p.do(method, path, "application/json", bytes.NewReader(b), out)
}

func (p *peer) multipart(path string, fields map[string]string, fileName string, file []byte, out any) {
	p.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	if fileName != "" {
		fw, _ := mw.CreateFormFile("file", fileName)
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	p.do("POST", path, mw.FormDataContentType(), &buf, out)
}

// upload stores PEM data and returns the certificate's id.
func (p *peer) upload(pem []byte) int64 {
	var out struct {
		Certificates []struct {
			ID int64 `json:"id"`
		} `json:"certificates"`
	}
	p.multipart("/api/v1/certificates", nil, "cert.pem", pem, &out)
	return out.Certificates[0].ID
}

// databases names the databases the first gateway of a test runs on: SQLite, and
// PostgreSQL when dbtest.PostgresURLEnv is set.
func databases(t *testing.T) map[string]string {
	return dbtest.URLs()
}

type protection struct {
	name                    string
	compress, sign, encrypt bool
	// compressLast compresses after signing.
	compressLast bool
}

func (pr protection) outbound(r map[string]any) {
	r["compress"] = pr.compress
	r["signing_algorithm"] = map[bool]string{true: "sha256", false: "none"}[pr.sign]
	r["encryption_algorithm"] = map[bool]string{true: "aes256-cbc", false: "none"}[pr.encrypt]
	r["compression_order"] = map[bool]string{true: "after_signing", false: "before_signing"}[pr.compressLast]
}

// TestTwoGatewaysExchange runs two gateways on loopback and sends a document from A to B
// under every protection profile, each with a sync and an async MDN, signed and not:
// B's file writer must hold the exact bytes, and A's delivery must be settled by the MDN.
func TestTwoGatewaysExchange(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, url string) {
		a := startPeer(t, "WHARF-A", url)
		b := startPeer(t, "WHARF B", "") // B keeps SQLite; an AS2 id with a space is quoted on the wire
		exchange(t, a, b)
	})
}

// eachGatewayDB runs fn for SQLite (an empty URL) and, when it is set up, PostgreSQL (the
// URL of a fresh schema).
func eachGatewayDB(t *testing.T, fn func(t *testing.T, dbURL string)) {
	for dbName, url := range databases(t) {
		t.Run(dbName, func(t *testing.T) { fn(t, url) })
	}
}

func exchange(t *testing.T, a, b *peer) {
	connect(t, a, b)
	protections := []protection{
		{name: "none"},
		{name: "signed", sign: true},
		{name: "encrypted", encrypt: true},
		{name: "signed+encrypted", sign: true, encrypt: true},
		{name: "compressed+signed+encrypted", compress: true, sign: true, encrypt: true},
		{name: "signed+compressed+encrypted", compress: true, sign: true, encrypt: true, compressLast: true},
	}
	for _, pr := range protections {
		for _, mode := range []string{"sync", "async"} {
			for _, signedMDN := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s/signed-mdn=%v", pr.name, mode, signedMDN)
				t.Run(name, func(t *testing.T) {
					a.t, b.t = t, t
					var ra map[string]any
					a.do("GET", "/api/v1/as2/remote-profiles/b", "", nil, &ra)
					pr.outbound(ra)
					ra["mdn_mode"], ra["signed_mdn"] = mode, signedMDN
					a.json("PUT", "/api/v1/as2/remote-profiles/b", ra, nil)
					var rb map[string]any
					b.do("GET", "/api/v1/as2/remote-profiles/a", "", nil, &rb)
					rb["require_signed"], rb["require_encrypted"] = pr.sign, pr.encrypt
					b.json("PUT", "/api/v1/as2/remote-profiles/a", rb, nil)
					sendAndVerify(t, a, b, pr, mode, signedMDN)
				})
			}
		}
	}
}

// connect makes a and b partners of each other (b in a, a in b) with AS2 profiles and
// keys, on the profiles' secure defaults, and checks a's connection to b.
func connect(t *testing.T, a, b *peer) {
	idA, idB := as2test.NewIdentity(t, "gateway-a"), as2test.NewIdentity(t, "gateway-b")
	pemA := append(certstest.CertsPEM(idA.Cert), certstest.KeyPEM(t, idA.Key, "pkcs8")...)
	pemB := append(certstest.CertsPEM(idB.Cert), certstest.KeyPEM(t, idB.Key, "pkcs8")...)
	ownA, ownB := a.upload(pemA), b.upload(pemB)
	partnerOfA, partnerOfB := a.upload(certstest.CertsPEM(idB.Cert)), b.upload(certstest.CertsPEM(idA.Cert))

	a.json("POST", "/api/v1/partners", map[string]any{"name": "b", "display_name": "Gateway B"}, nil)
	b.json("POST", "/api/v1/partners", map[string]any{"name": "a", "display_name": "Gateway A"}, nil)
	a.json("POST", "/api/v1/as2/local-profiles", map[string]any{"organization": "local", "as2_id": a.name,
		"signing_certificate_id": ownA, "decryption_certificate_id": ownA}, nil)
	b.json("POST", "/api/v1/as2/local-profiles", map[string]any{"organization": "local", "as2_id": b.name,
		"signing_certificate_id": ownB, "decryption_certificate_id": ownB}, nil)
	a.json("POST", "/api/v1/as2/remote-profiles", map[string]any{"partner": "b", "as2_id": b.name,
		"endpoint_url": b.as2 + "/as2", "partner_certificate_ids": []int64{partnerOfA},
		"async_mdn_url": a.as2 + "/as2/mdn"}, nil)
	b.json("POST", "/api/v1/as2/remote-profiles", map[string]any{"partner": "a", "as2_id": a.name,
		"endpoint_url": a.as2 + "/as2", "partner_certificate_ids": []int64{partnerOfB}}, nil)

	var check struct {
		OK    bool `json:"ok"`
		Steps []struct {
			Step string `json:"step"`
			OK   bool   `json:"ok"`
		} `json:"steps"`
	}
	a.json("POST", "/api/v1/as2/remote-profiles/b/connection-check", map[string]any{}, &check)
	if !check.OK || len(check.Steps) != 3 {
		t.Fatalf("connection check = %+v", check)
	}
}

type messageView struct {
	ID         int64  `json:"id"`
	Status     string `json:"status"`
	SHA256     string `json:"sha256"`
	Deliveries []struct {
		State     string `json:"state"`
		LastError string `json:"last_error"`
	} `json:"deliveries"`
	Payloads []struct {
		Stage string `json:"stage"`
	} `json:"payloads"`
	Protocols map[string]json.RawMessage `json:"protocols"`
}

func (m messageView) hasStage(stage string) bool {
	for _, p := range m.Payloads {
		if p.Stage == stage {
			return true
		}
	}
	return false
}

func sendAndVerify(t *testing.T, a, b *peer, pr protection, mode string, signedMDN bool) {
	doc := make([]byte, 20<<10)
	_, _ = rand.Read(doc)
	sum := sha256.Sum256(doc)
	fileName := "order-" + hex.EncodeToString(sum[:4]) + ".bin"
	var sent messageView
	a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "b", "target": "as2_sender_default"}, fileName, doc, &sent)

	deadline := time.Now().Add(30 * time.Second)
	var got messageView
	for {
		a.do("GET", fmt.Sprintf("/api/v1/messages/%d", sent.ID), "", nil, &got)
		if len(got.Deliveries) == 1 && (got.Deliveries[0].State == "delivered" || got.Deliveries[0].State == "failed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %d not settled: %+v", sent.ID, got.Deliveries)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got.Deliveries[0].State != "delivered" {
		t.Fatalf("delivery failed: %s", got.Deliveries[0].LastError)
	}
	if !got.hasStage("receipt") {
		t.Errorf("A's message has no receipt stage: %+v", got.Payloads)
	}
	var outPanel struct {
		Direction string `json:"direction"`
		Outbound  []struct {
			Compressed          bool   `json:"compressed"`
			SigningAlgorithm    string `json:"signing_algorithm"`
			EncryptionAlgorithm string `json:"encryption_algorithm"`
			MDN                 *struct {
				Transport  string `json:"transport"`
				Signed     bool   `json:"signed"`
				MICMatched bool   `json:"mic_matched"`
			} `json:"mdn"`
		} `json:"outbound"`
	}
	if err := json.Unmarshal(got.Protocols["as2"], &outPanel); err != nil || len(outPanel.Outbound) != 1 {
		t.Fatalf("A's AS2 panel %s: %v", got.Protocols["as2"], err)
	}
	o := outPanel.Outbound[0]
	if o.Compressed != pr.compress || (o.SigningAlgorithm != "none") != pr.sign || (o.EncryptionAlgorithm != "none") != pr.encrypt {
		t.Errorf("A sent %+v, want %+v", o, pr)
	}
	if o.MDN == nil || o.MDN.Transport != mode || o.MDN.Signed != signedMDN || !o.MDN.MICMatched {
		t.Errorf("A's receipt = %+v, want a %s MDN signed=%v with a matching MIC", o.MDN, mode, signedMDN)
	}

	// B wrote the exact bytes to its inbox and kept the request and its MDN.
	path := filepath.Join(b.data, "inbox", "a", fileName)
	for {
		data, err := os.ReadFile(path)
		if err == nil && bytes.Equal(data, doc) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's inbox lacks %s: %v", fileName, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var list struct {
		Messages []messageView `json:"messages"`
	}
	b.do("GET", "/api/v1/messages?from=a&limit=1000", "", nil, &list)
	var inbound *messageView
	for i := range list.Messages {
		if list.Messages[i].SHA256 == hex.EncodeToString(sum[:]) {
			if inbound != nil {
				t.Fatalf("B stored the document twice")
			}
			inbound = &list.Messages[i]
		}
	}
	if inbound == nil {
		t.Fatal("B has no message with the document's hash")
	}
	var detail messageView
	b.do("GET", fmt.Sprintf("/api/v1/messages/%d", inbound.ID), "", nil, &detail)
	for _, stage := range []string{"unpacked", "received", "headers", "receipt"} {
		if !detail.hasStage(stage) {
			t.Errorf("B's message lacks the %s stage (%s MDN)", stage, mode)
		}
	}
	var inPanel struct {
		Inbound struct {
			Signed, Encrypted, Compressed bool
			MDNMode                       string `json:"mdn_mode"`
			MDNSigned                     bool   `json:"mdn_signed"`
			Disposition                   string `json:"disposition"`
		} `json:"inbound"`
	}
	if err := json.Unmarshal(detail.Protocols["as2"], &inPanel); err != nil {
		t.Fatalf("B's AS2 panel %s: %v", detail.Protocols["as2"], err)
	}
	in := inPanel.Inbound
	if in.Signed != pr.sign || in.Encrypted != pr.encrypt || in.Compressed != pr.compress ||
		in.MDNMode != mode || in.MDNSigned != signedMDN || !strings.HasPrefix(in.Disposition, "automatic-action/MDN-sent-automatically; processed") {
		t.Errorf("B received %+v, want %+v with a %s MDN signed=%v", in, pr, mode, signedMDN)
	}
}
