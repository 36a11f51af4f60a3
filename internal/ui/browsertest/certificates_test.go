package browsertest

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"wharf/internal/certs/certstest"
)

// uploadPartnerCertificate uploads a partner's certificate (PEM) over REST and returns its id.
func (h *harness) uploadPartnerCertificate(t *testing.T, pemFile []byte) int64 {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("partner", "true")
	fw, _ := mw.CreateFormFile("file", "partner.pem")
	_, _ = fw.Write(pemFile)
	_ = mw.Close()
	code, data := h.api("POST", "/api/v1/certificates", mw.FormDataContentType(), &buf)
	if code != http.StatusCreated {
		t.Fatalf("upload = %d: %s", code, data)
	}
	id := strings.SplitN(strings.SplitN(string(data), `"id":`, 2)[1], ",", 2)[0]
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestProfileFormsPickCertificates: the AS2 profile forms of the whole gateway offer
// certificates in selects named by subject, expiry and use, ours with keys where a key
// signs and the partner's where the partner's go, and the picks save like REST's ids.
func TestProfileFormsPickCertificates(t *testing.T) {
	h := start(t)
	c, _ := h.signedIn(t, "alice")
	h.mustJSON("POST", "/api/v1/partners", map[string]any{"name": "b"}, nil)

	r := c.post(t, "/ui/certificates/generate", url.Values{"algorithm": {"rsa-2048"}, "common_name": {"WHARF-OURS"},
		"organization": {"Example"}, "validity_days": {"365"}})
	ours, ok := strings.CutPrefix(r.header.Get("Location"), "/ui/certificates/")
	if r.status != http.StatusSeeOther || !ok {
		t.Fatalf("generate = %d\n%s", r.status, r.body)
	}
	ca := certstest.CA(t, "Partner CA")
	partner := h.uploadPartnerCertificate(t, certstest.CertsPEM(certstest.ValidLeaf(t, ca, "partner-b", certstest.RSAKey(t)).Cert))
	theirs := strconv.FormatInt(partner, 10)

	local := c.get(t, "/ui/organizations/local/panels/as2/edit").body
	sel := selectOf(t, local, "signing_certificate_id")
	// Our one key is the one sensible choice of a new profile: chosen already.
	if !strings.Contains(sel, `<option value="`+ours+`" selected>CN=WHARF-OURS,O=Example · expires `) || strings.Contains(sel, "partner-b") {
		t.Errorf("local signing select:\n%s", sel)
	}
	if strings.Contains(local, `name="signing_certificate_id" type="text"`) {
		t.Error("the signing certificate is still typed")
	}

	remote := c.get(t, "/ui/partners/b/panels/as2/edit").body
	sel = selectOf(t, remote, "partner_certificate_ids")
	if !strings.Contains(sel, " multiple") || !strings.Contains(sel, `<option value="`+theirs+`">CN=partner-b,O=Wharf Test · expires `) ||
		strings.Contains(sel, "WHARF-OURS") {
		t.Errorf("partner certificate select:\n%s", sel)
	}
	if sel = selectOf(t, remote, "tls_trust_certificate_ids"); !strings.Contains(sel, "partner-b") {
		t.Errorf("TLS roots select:\n%s", sel)
	}

	// Picking our certificate saves its id; its page then lists the organization.
	form := url.Values{"as2_id": {"WHARF-OURS"}, "signing_certificate_id": {ours}, "decryption_certificate_id": {ours},
		"max_message_size_mib": {"64"}}
	if r := c.post(t, "/ui/organizations/local/panels/as2", form); r.status != http.StatusSeeOther {
		t.Fatalf("save local profile = %d\n%s", r.status, r.body)
	}
	var profile struct {
		Signing int64 `json:"signing_certificate_id"`
	}
	h.mustJSON("GET", "/api/v1/as2/local-profiles/local", nil, &profile)
	if strconv.FormatInt(profile.Signing, 10) != ours {
		t.Errorf("stored signing certificate %d, want %s", profile.Signing, ours)
	}
	page := c.get(t, "/ui/organizations/local").body
	if !strings.Contains(page, "CN=WHARF-OURS,O=Example (until ") || strings.Contains(page, "#"+ours) {
		t.Errorf("the organization's page does not name the certificate by subject:\n%s", page)
	}
	list := c.get(t, "/ui/certificates").body
	if !strings.Contains(list, `<a href="/ui/organizations/local">local</a>`) {
		t.Errorf("the list does not link the certificate's user:\n%s", list)
	}

	// Our key-holding certificate is refused as the partner's, with the reason.
	rf := remoteForm("https://partner.example/as2")
	rf["partner_certificate_ids"] = []string{ours}
	r = c.post(t, "/ui/partners/b/panels/as2", rf)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "one of our own certificates with its private key") {
		t.Errorf("our certificate as the partner's = %d\n%s", r.status, r.body)
	}
	rf["partner_certificate_ids"] = []string{theirs}
	if r := c.post(t, "/ui/partners/b/panels/as2", rf); r.status != http.StatusSeeOther {
		t.Fatalf("save remote profile = %d\n%s", r.status, r.body)
	}
}

// selectOf is the select element named name in body.
func selectOf(t *testing.T, body, name string) string {
	t.Helper()
	i := strings.Index(body, `<select id="f-`+name+`"`)
	if i < 0 {
		t.Fatalf("no select %s in:\n%s", name, body)
	}
	j := strings.Index(body[i:], "</select>")
	return body[i : i+j]
}
