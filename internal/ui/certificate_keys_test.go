package ui

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
)

func TestGenerateKeyPairPage(t *testing.T) {
	cb := setupConfigPages(t)
	form := cb.get(t, "/ui/certificates/generate", http.StatusOK)
	for _, want := range []string{`<select id="algorithm" name="algorithm"`, `<option value="rsa-2048" selected>`,
		`<option value="ecdsa-p256">`, `name="common_name"`, `name="organization"`, `name="country"`, `name="validity_days"`, `value="730"`} {
		if !strings.Contains(form, want) {
			t.Errorf("the form lacks %s", want)
		}
	}

	// Every wrong field is marked beside itself in one answer, and what was typed stays.
	r := cb.post(t, "/ui/certificates/generate", url.Values{"algorithm": {"rsa-4096"}, "common_name": {""},
		"organization": {"Kept Ltd"}, "country": {"Germany"}, "validity_days": {"two years"}})
	if r.status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d", r.status)
	}
	got := formErrorFields(r.body)
	slices.Sort(got)
	if want := []string{"common_name", "country", "validity_days"}; !slices.Equal(got, want) {
		t.Errorf("errors at %v, want %v", got, want)
	}
	for _, want := range []string{`value="Kept Ltd"`, `value="Germany"`, `<option value="rsa-4096" selected>`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the refused form lost %s", want)
		}
	}

	r = cb.post(t, "/ui/certificates/generate", url.Values{"algorithm": {"ecdsa-p256"}, "common_name": {"WHARF-A"},
		"organization": {"Example"}, "country": {"DE"}, "validity_days": {"365"}})
	wantRedirect(t, r, "/ui/certificates/1")
	page := cb.get(t, "/ui/certificates/1", http.StatusOK)
	for _, want := range []string{"Key pair and self-signed certificate generated", "CN=WHARF-A,O=Example,C=DE", "Ours, with key",
		`href="/ui/certificates/1/certificate.pem"`, `href="/ui/certificates/1/certificate.cer"`, `href="/ui/certificates/1/request.csr"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the certificate page lacks %s", want)
		}
	}
	stored, err := cb.store.GetCertificate(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(stored.DER)
	if !stored.HasPrivateKey || cert.NotAfter.Sub(cb.clock.Now()).Hours() != 365*24 {
		t.Fatalf("stored %+v until %s", stored, cert.NotAfter)
	}
}

func TestCertificateDownloadsAndRequest(t *testing.T) {
	cb := setupConfigPages(t)
	wantRedirect(t, cb.post(t, "/ui/certificates/generate", url.Values{"algorithm": {"rsa-2048"}, "common_name": {"ours"},
		"validity_days": {"30"}}), "/ui/certificates/1")
	ca := certstest.CA(t, "Partner CA")
	partner := certstest.ValidLeaf(t, ca, "partner.example", certstest.ECKey(t))
	wantRedirect(t, cb.upload(t, "/ui/certificates", map[string]string{"partner": "true"}, certstest.CertsPEM(partner.Cert), true), "/ui/certificates/2")
	stored, err := cb.store.GetCertificate(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}

	der := cb.c.get(t, "/ui/certificates/1/certificate.cer")
	if der.status != http.StatusOK || der.body != string(stored.DER) || der.header.Get("Content-Type") != "application/pkix-cert" ||
		der.header.Get("Content-Disposition") != "attachment; filename=certificate-1.cer" {
		t.Fatalf("DER download %d %v", der.status, der.header)
	}
	p := cb.c.get(t, "/ui/certificates/1/certificate.pem")
	blk, _ := pem.Decode([]byte(p.body))
	if p.status != http.StatusOK || blk == nil || blk.Type != "CERTIFICATE" || !bytes.Equal(blk.Bytes, stored.DER) {
		t.Fatalf("PEM download %d %q", p.status, p.body)
	}
	csr := cb.c.get(t, "/ui/certificates/1/request.csr")
	blk, _ = pem.Decode([]byte(csr.body))
	if csr.status != http.StatusOK || blk == nil || blk.Type != "CERTIFICATE REQUEST" {
		t.Fatalf("request %d %q", csr.status, csr.body)
	}
	req, err := x509.ParseCertificateRequest(blk.Bytes)
	if err != nil || req.CheckSignature() != nil || req.Subject.CommonName != "ours" {
		t.Fatalf("request %v: %v", req, err)
	}
	// The partner's certificate has no key of ours: no request offered, none answered.
	if page := cb.get(t, "/ui/certificates/2", http.StatusOK); strings.Contains(page, "request.csr") || !strings.Contains(page, "Partner&#39;s") {
		t.Errorf("partner certificate page:\n%s", page)
	}
	if r := cb.c.get(t, "/ui/certificates/2/request.csr"); r.status != http.StatusConflict {
		t.Errorf("request for a partner's certificate: %d", r.status)
	}
	// The CA's answer joins the stored key.
	issued := certstest.Issue(t, ca, req.Subject, req.PublicKey)
	wantRedirect(t, cb.upload(t, "/ui/certificates", nil, certstest.CertsPEM(issued), true), "/ui/certificates/3")
	if c, _ := cb.store.GetCertificate(t.Context(), 3); !c.HasPrivateKey {
		t.Error("the CA's certificate did not join the stored key")
	}
	list := cb.get(t, "/ui/certificates", http.StatusOK)
	for _, want := range []string{`data-role="ours"`, `data-role="partner"`, `href="/ui/certificates/generate"`} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %s", want)
		}
	}
}

func TestCertificateUploadKeyFileAndPartner(t *testing.T) {
	cb := setupConfigPages(t)
	if form := cb.get(t, "/ui/certificates/new", http.StatusOK); !strings.Contains(form, `name="key" type="file"`) || !strings.Contains(form, `name="partner"`) {
		t.Fatalf("upload form:\n%s", form)
	}
	ca := certstest.CA(t, "Test CA")
	key := certstest.RSAKey(t)
	leaf := certstest.ValidLeaf(t, ca, "ours.example", key)
	cases := []struct {
		name   string
		fields map[string]string
		files  map[string][]byte
		field  string
		msg    string
	}{
		{"key of another certificate", nil, map[string][]byte{"file": certstest.CertsPEM(leaf.Cert), "key": certstest.KeyPEM(t, certstest.RSAKey(t), certstest.PKCS8)},
			"key", "does not belong to the certificate"},
		{"our own as a partner's", map[string]string{"partner": "true"}, map[string][]byte{"file": append(certstest.CertsPEM(leaf.Cert), certstest.KeyPEM(t, key, certstest.PKCS8)...)},
			"file", "one of our own certificates with its private key; a partner&#39;s certificate comes from the partner"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := cb.uploadFiles(t, "/ui/certificates", tc.fields, tc.files, true)
			if r.status != http.StatusUnprocessableEntity || !slices.Equal(formErrorFields(r.body), []string{tc.field}) || !strings.Contains(r.body, tc.msg) {
				t.Fatalf("status %d, errors %v\n%s", r.status, formErrorFields(r.body), r.body)
			}
			if tc.fields["partner"] != "" && !strings.Contains(r.body, `name="partner" type="checkbox" value="true" checked`) {
				t.Error("the refused form lost the partner box")
			}
		})
	}
	wantRedirect(t, cb.uploadFiles(t, "/ui/certificates", nil, map[string][]byte{"file": certstest.CertsPEM(leaf.Cert),
		"key": certstest.KeyPEM(t, key, certstest.PKCS1)}, true), "/ui/certificates/1")
	if c, _ := cb.store.GetCertificate(t.Context(), 1); !c.HasPrivateKey || certs.RoleOf(c) != certs.RoleOurs {
		t.Errorf("stored %+v", c)
	}
}
