package browsertest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/as2test"
)

// identify gives the gateway's organization "local" an AS2 identity with a key of its
// own, over REST (key generation in the UI is not what these tests are about).
func (h *harness) identify(as2ID, idName string) {
	h.t.Helper()
	id := as2test.NewIdentity(h.t, idName)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "own.pem")
	_, _ = fw.Write(append(certstest.CertsPEM(id.Cert), certstest.KeyPEM(h.t, id.Key, "pkcs8")...))
	_ = mw.Close()
	code, data := h.api("POST", "/api/v1/certificates", mw.FormDataContentType(), &buf)
	if code != http.StatusCreated {
		h.t.Fatalf("upload = %d %s", code, data)
	}
	var up struct {
		Certificates []struct {
			ID int64 `json:"id"`
		} `json:"certificates"`
	}
	if err := json.Unmarshal(data, &up); err != nil {
		h.t.Fatal(err)
	}
	own := up.Certificates[0].ID
	h.mustJSON("POST", "/api/v1/as2/local-profiles", map[string]any{"organization": "local", "as2_id": as2ID,
		"signing_certificate_id": own, "decryption_certificate_id": own}, nil)
}

// counted is a signed-in client that counts what a newcomer does: form submissions and
// fields typed (a chosen file, a radio button and a pre-filled value are not typed).
type counted struct {
	*client
	submissions, typed int
}

func (c *counted) submit(t *testing.T, path string, form map[string]string, typed int) response {
	t.Helper()
	c.submissions++
	c.typed += typed
	vals := map[string][]string{}
	for k, v := range form {
		vals[k] = []string{v}
	}
	return c.post(t, path, vals)
}

// submitFiles posts a multipart form with the session's CSRF token, as a browser does
// for a form with file inputs.
func (c *counted) submitFiles(t *testing.T, path string, fields map[string]string, files map[string][]byte, typed int) response {
	t.Helper()
	c.submissions++
	c.typed += typed
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("csrf_token", c.csrf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	for k, v := range files {
		fw, _ := mw.CreateFormFile(k, k+".json")
		_, _ = fw.Write(v)
	}
	_ = mw.Close()
	req, err := http.NewRequest("POST", c.h.base+path, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

func wantSeeOther(t *testing.T, r response, to string) {
	t.Helper()
	if r.status != http.StatusSeeOther || r.header.Get("Location") != to {
		t.Fatalf("= %d to %q, want 303 to %s\n%s", r.status, r.header.Get("Location"), to, r.body)
	}
}

// download fetches a file of the "Our AS2 details" card.
func download(t *testing.T, c *client, name, wantType string) []byte {
	t.Helper()
	r := c.get(t, "/ui/organizations/local/panels/as2/downloads/"+name)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != wantType ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment; filename=") {
		t.Fatalf("download %s = %d %v", name, r.status, r.header)
	}
	return []byte(r.body)
}

// wantSignedReceipt requires message id delivered over AS2 once, with a signed receipt
// whose MIC matched, as REST tells it.
func (h *harness) wantSignedReceipt(t *testing.T, id string) {
	t.Helper()
	var msg struct {
		Status    string `json:"status"`
		Protocols struct {
			AS2 struct {
				Outbound []struct {
					MDN *struct {
						Signed     bool `json:"signed"`
						MICMatched bool `json:"mic_matched"`
					} `json:"mdn"`
				} `json:"outbound"`
			} `json:"as2"`
		} `json:"protocols"`
	}
	h.mustJSON("GET", "/api/v1/messages/"+id, nil, &msg)
	out := msg.Protocols.AS2.Outbound
	if msg.Status != "delivered" || len(out) != 1 || out[0].MDN == nil || !out[0].MDN.Signed || !out[0].MDN.MICMatched {
		t.Errorf("test message %s: %+v", id, msg)
	}
}

var progressRE = regexp.MustCompile(`/setup/test-message\?message=(\d+)`)

// TestPartnerWizard makes two gateways partners of each other through the UI alone
// (after each has an AS2 identity): each downloads its profile file from its
// organization's page and the other imports it in the wizard, picks a preset, checks the
// connection and sends a test message, which comes back with a signed MDN, verified.
func TestPartnerWizard(t *testing.T) {
	for dbName, url := range dbtest.URLs() {
		t.Run(dbName, func(t *testing.T) {
			a, b := startOn(t, url), start(t)
			a.identify("WHARF-A", "gateway-a")
			b.identify("WHARF-B", "gateway-b")
			ca, _ := a.signedIn(t, "ada")
			cb, _ := b.signedIn(t, "bob")
			wa, wb := &counted{client: ca}, &counted{client: cb}

			// The card shows what a partner needs, says the address is a guess, and
			// offers the file and the certificate.
			page := ca.get(t, "/ui/organizations/local").body
			if !regexp.MustCompile(`valid until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC`).MatchString(page) {
				t.Error("the certificates' expiry on the organization page does not name its zone")
			}
			for _, want := range []string{"Our AS2 details", "WHARF-A", "a guess from the receiver", "Download the profile file",
				"/ui/organizations/local/panels/as2/downloads/signing.cer"} {
				if !strings.Contains(page, want) {
					t.Errorf("the organization page lacks %q", want)
				}
			}
			if pem := download(t, ca, "signing.pem", "application/x-pem-file"); !bytes.HasPrefix(pem, []byte("-----BEGIN CERTIFICATE-----")) {
				t.Errorf("signing.pem = %q", pem)
			}
			download(t, ca, "signing.cer", "application/pkix-cert")
			if r := ca.get(t, "/ui/organizations/local/panels/as2/downloads/key.pem"); r.status != http.StatusNotFound {
				t.Errorf("an unknown download = %d", r.status)
			}
			fileA := download(t, ca, "profile", "application/json")
			fileB := download(t, cb, "profile", "application/json")

			// Each side: the wizard's first page, then its steps.
			for _, side := range []struct {
				c       *counted
				file    []byte
				partner string
			}{{wb, fileA, "wharf-a"}, {wa, fileB, "wharf-b"}} {
				c := side.c
				if body := c.get(t, "/ui/partners/new").body; !strings.Contains(body, `name="profile_file"`) || !strings.Contains(body, `aria-current="step"`) {
					t.Fatalf("the new-partner page is not the wizard:\n%s", body)
				}
				base := "/ui/partners/" + side.partner + "/setup/"
				wantSeeOther(t, c.submitFiles(t, "/ui/partners/new", nil, map[string][]byte{"profile_file": side.file}, 0), base+"security")
				sec := c.get(t, base+"security").body
				for _, want := range []string{"Wharf defaults", "Compatible with older partners", "OpenAS2", "sends again under a new Message-ID", "refuse"} {
					if !strings.Contains(sec, want) {
						t.Errorf("the security step lacks %q", want)
					}
				}
				wantSeeOther(t, c.submit(t, base+"security", map[string]string{"preset": "wharf"}, 0), base+"check")
			}

			// A checks the connection to B and sends the test message.
			check := wa.submit(t, "/ui/partners/wharf-b/setup/check", nil, 0)
			if check.status != http.StatusOK || !strings.Contains(check.body, "answers") || !strings.Contains(check.body, "Next: Send a test message") {
				t.Fatalf("connection check = %d\n%s", check.status, check.body)
			}
			sent := wa.submit(t, "/ui/partners/wharf-b/setup/test-message", nil, 0)
			loc := sent.header.Get("Location")
			m := progressRE.FindStringSubmatch(loc)
			if sent.status != http.StatusSeeOther || m == nil {
				t.Fatalf("test message = %d to %q\n%s", sent.status, loc, sent.body)
			}
			if body := ca.get(t, loc).body; !strings.Contains(body, `id="wizard-progress"`) || !strings.Contains(body, "Finish: go to wharf-b") {
				t.Errorf("the progress page:\n%s", body)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				frag := ca.get(t, "/ui/partners/wharf-b/setup/progress/"+m[1]).body
				if strings.Contains(frag, "delivered.") {
					if strings.Contains(frag, "hx-get") {
						t.Error("a settled message is still polled")
					}
					break
				}
				if strings.Contains(frag, "not delivered") || time.Now().After(deadline) {
					t.Fatalf("test message %s: %s", m[1], frag)
				}
				time.Sleep(50 * time.Millisecond)
			}
			a.wantSignedReceipt(t, m[1])

			// The full profile form stays for later edits, in parts, the advanced one folded.
			form := ca.get(t, "/ui/partners/wharf-b/panels/as2/edit").body
			for _, want := range []string{"<legend>Identity</legend>", "<legend>Security</legend>", "<legend>Receipts</legend>",
				`<details class="form-group-folded"><summary>Advanced</summary>`, "Where to send messages"} {
				if !strings.Contains(form, want) {
					t.Errorf("the profile form lacks %s", want)
				}
			}

			// What a newcomer did for A's partner: one submission per step, nothing typed.
			t.Logf("wizard for one partner: %d form submissions, %d typed fields", wa.submissions, wa.typed)
			if wa.submissions != 4 || wa.typed != 0 {
				t.Errorf("A's wizard took %d submissions and %d typed fields, want 4 and 0", wa.submissions, wa.typed)
			}
		})
	}
}

// TestPartnerWizardRefusals: the first step shows every wrong field beside its own input
// at once, keeps what was typed, names a foreign profile file, and writes nothing.
func TestPartnerWizardRefusals(t *testing.T) {
	h := start(t)
	c, _ := h.signedIn(t, "ada")
	w := &counted{client: c}
	tests := []struct {
		name   string
		fields map[string]string
		files  map[string][]byte
		errors []string
		kept   []string
	}{
		{"typed values wrong", map[string]string{"as2_id": `ACME"`, "endpoint_url": "ftp://acme.example/as2", "name": "Acme!"}, nil,
			[]string{"f-as2_id-error", "f-endpoint_url-error", "f-certificate-error", "f-name-error"}, []string{`value="ftp://acme.example/as2"`, `value="Acme!"`}},
		{"foreign profile file", nil, map[string][]byte{"profile_file": []byte(`{"format":"openas2-partnerships/1"}`)},
			[]string{"f-profile_file-error"}, []string{"openas2-partnerships/1"}},
		{"a private key as certificate", map[string]string{"as2_id": "ACME", "endpoint_url": "https://acme.example/as2",
			"certificate_pem": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"}, nil,
			[]string{"f-certificate-error"}, []string{`value="ACME"`}},
		{"a preset not offered", map[string]string{"as2_id": "ACME", "endpoint_url": "https://acme.example/as2", "preset": "bogus"}, nil,
			[]string{"f-preset-error"}, []string{`value="ACME"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := w.submitFiles(t, "/ui/partners/new", tt.fields, tt.files, 0)
			if r.status != http.StatusUnprocessableEntity {
				t.Fatalf("= %d\n%s", r.status, r.body)
			}
			for _, want := range append(tt.errors, tt.kept...) {
				if !strings.Contains(r.body, want) {
					t.Errorf("the refused form lacks %s", want)
				}
			}
		})
	}
	var partners struct {
		Total int `json:"total"`
	}
	h.mustJSON("GET", "/api/v1/partners", nil, &partners)
	if partners.Total != 0 {
		t.Errorf("refused forms created %d partners", partners.Total)
	}
	if r := c.post(t, "/ui/partners/nobody/setup/security", map[string][]string{"preset": {"wharf"}}); r.status != http.StatusNotFound {
		t.Errorf("the preset step of a missing partner = %d", r.status)
	}
}
