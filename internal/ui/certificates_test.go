package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
	"wharf/internal/records"
)

func TestCertificateUploadListDetail(t *testing.T) {
	cb := setupConfigPages(t)
	now := cb.clock.Now()
	ca := certstest.CA(t, "Test CA")
	soon := certstest.Leaf(t, ca, "soon.example", certstest.ECKey(t), now.Add(-24*time.Hour), now.Add(10*24*time.Hour))
	gone := certstest.Leaf(t, ca, "gone.example", certstest.ECKey(t), now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	later := certstest.Leaf(t, ca, "later.example", certstest.ECKey(t), now.Add(-24*time.Hour), now.Add(400*24*time.Hour))

	if body := cb.get(t, "/ui/certificates", http.StatusOK); !strings.Contains(body, "No certificate yet.") {
		t.Errorf("empty list:\n%s", body)
	}
	if body := cb.get(t, "/ui/certificates/new", http.StatusOK); !strings.Contains(body, `enctype="multipart/form-data"`) {
		t.Errorf("upload form:\n%s", body)
	}

	// A certificate with its key, PEM, with a description.
	pemFile := append(certstest.CertsPEM(soon.Cert), certstest.KeyPEM(t, soon.Key, certstest.PKCS8)...)
	r := cb.upload(t, "/ui/certificates", map[string]string{"description": "TLS of the soon host"}, pemFile, true)
	wantRedirect(t, r, "/ui/certificates/1")
	detail := cb.get(t, "/ui/certificates/1", http.StatusOK)
	for _, want := range []string{"Certificate uploaded.", "CN=soon.example", "CN=Test CA", certs.Fingerprint(soon.Cert.Raw),
		"Expires in 10 days", "Stored, sealed", "TLS of the soon host", "Nothing uses this certificate.",
		"BEGIN CERTIFICATE", `data-confirm="Delete certificate CN=soon.example`} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q\n%s", want, detail)
		}
	}
	if strings.Contains(detail, "PRIVATE KEY") {
		t.Error("the detail page shows the private key")
	}

	// Two certificates in one DER-less PEM file land on the list.
	wantRedirect(t, cb.upload(t, "/ui/certificates", nil, certstest.CertsPEM(gone.Cert, later.Cert), true), "/ui/certificates")
	list := cb.get(t, "/ui/certificates", http.StatusOK)
	for _, want := range []string{"Certificates uploaded.", `href="/ui/certificates/1"`, `href="/ui/certificates/2"`,
		`href="/ui/certificates/3"`, "CN=gone.example", ">Expired<", "Expires in 10 days", certs.Fingerprint(later.Cert.Raw)} {
		if !strings.Contains(list, want) {
			t.Errorf("list lacks %q\n%s", want, list)
		}
	}
	laterRow := list[strings.Index(list, "CN=later.example"):]
	laterRow = laterRow[:strings.Index(laterRow, "</tr>")]
	if strings.Contains(laterRow, "badge-warning") || strings.Contains(laterRow, "badge-danger") {
		t.Errorf("a certificate valid for 400 days is marked: %s", laterRow)
	}
}

func TestCertificateUploadRefused(t *testing.T) {
	cb := setupConfigPages(t)
	ca := certstest.CA(t, "Test CA")
	leaf := certstest.ValidLeaf(t, ca, "leaf.example", certstest.RSAKey(t))
	wantRedirect(t, cb.upload(t, "/ui/certificates", nil, certstest.CertsPEM(leaf.Cert), true), "/ui/certificates/1")

	const password = "p12-canary-password"
	tests := []struct {
		name   string
		fields map[string]string
		file   []byte
		status int
		field  string
	}{
		{"no file", map[string]string{"description": "kept"}, nil, http.StatusUnprocessableEntity, "file"},
		{"not a certificate", map[string]string{"description": "kept"}, []byte("hello"), http.StatusUnprocessableEntity, "file"},
		{"duplicate", map[string]string{"description": "kept"}, leaf.Cert.Raw, http.StatusConflict, "file"},
		{"description too long", map[string]string{"description": strings.Repeat("d", 201)},
			certstest.CertsPEM(certstest.ValidLeaf(t, ca, "other.example", certstest.ECKey(t)).Cert), http.StatusUnprocessableEntity, "description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cb.upload(t, "/ui/certificates", tt.fields, tt.file, true)
			if r.status != tt.status {
				t.Fatalf("status = %d, want %d\n%s", r.status, tt.status, r.body)
			}
			if got := formErrorFields(r.body); len(got) != 1 || got[0] != tt.field {
				t.Errorf("errors at %v, want %s\n%s", got, tt.field, r.body)
			}
			if d := tt.fields["description"]; len(d) <= 200 && !strings.Contains(r.body, `value="`+d+`"`) {
				t.Errorf("the form lost the description\n%s", r.body)
			}
		})
	}

	t.Run("wrong PKCS#12 password", func(t *testing.T) {
		p12 := certstest.OpenSSLPKCS12(t, certstest.ValidLeaf(t, ca, "p12.example", certstest.RSAKey(t)), nil, password)
		r := cb.upload(t, "/ui/certificates", map[string]string{"password": password + "-wrong"}, p12, true)
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="password-error"`) {
			t.Fatalf("status = %d\n%s", r.status, r.body)
		}
		if strings.Contains(r.body, password) {
			t.Error("the refused form shows the password")
		}
		wantRedirect(t, cb.upload(t, "/ui/certificates", map[string]string{"password": password}, p12, true), "/ui/certificates/2")
		for _, body := range cb.c.seen {
			if strings.Contains(body, password) {
				t.Fatal("a page shows the PKCS#12 password")
			}
		}
	})
}

// TestCertificateUploadBodyLimit holds the upload to the REST API's limit rather than
// the 64 KiB of the other forms.
func TestCertificateUploadBodyLimit(t *testing.T) {
	cb := setupConfigPages(t)
	leaf := certstest.ValidLeaf(t, certstest.CA(t, "Test CA"), "big.example", certstest.ECKey(t))
	// Text before a PEM block is skipped by the parser, so this is a valid file past 64 KiB.
	padded := append(bytes.Repeat([]byte("# padding line\n"), 200<<10/15), certstest.CertsPEM(leaf.Cert)...)
	if len(padded) <= maxBody {
		t.Fatalf("padded file is only %d bytes", len(padded))
	}
	wantRedirect(t, cb.upload(t, "/ui/certificates", nil, padded, true), "/ui/certificates/1")

	huge := bytes.Repeat([]byte("x"), certUploadLimit+1)
	if r := cb.upload(t, "/ui/certificates", nil, huge, true); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("upload past the limit = %d, want 413", r.status)
	}
	over := bytes.Repeat([]byte("x"), certs.MaxUploadSize+1)
	if r := cb.upload(t, "/ui/certificates", nil, over, true); r.status != http.StatusRequestEntityTooLarge ||
		!strings.Contains(r.body, `id="file-error"`) {
		t.Errorf("file past certs.MaxUploadSize = %d\n%s", r.status, r.body)
	}
	// Every other form keeps the small limit.
	big := url.Values{"name": {strings.Repeat("a", maxBody)}}
	if r := cb.post(t, "/ui/partners", big); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a partner form past maxBody = %d, want 413", r.status)
	}
}

func TestCertificateDeleteRefusedWhileUsed(t *testing.T) {
	cb := setupConfigPages(t)
	ctx := context.Background()
	ca := certstest.CA(t, "Test CA")
	wantRedirect(t, cb.upload(t, "/ui/certificates", nil, certstest.CertsPEM(certstest.ValidLeaf(t, ca, "a.example", certstest.ECKey(t)).Cert), true), "/ui/certificates/1")
	wantRedirect(t, cb.upload(t, "/ui/certificates", nil, certstest.CertsPEM(certstest.ValidLeaf(t, ca, "b.example", certstest.ECKey(t)).Cert), true), "/ui/certificates/2")

	// A module's record (an AS2 profile) and a plugin instance use certificate 1.
	if err := cb.store.SetCertificateUses(ctx, "as2_remote_profile", "acme", []int64{1}); err != nil {
		t.Fatal(err)
	}
	dir, _ := json.Marshal(t.TempDir())
	if _, err := records.SavePluginConfig(ctx, cb.store, cb.box, persistence.PluginFileWriter, "", []byte(`{"name":"inbox","directory":`+string(dir)+`}`)); err != nil {
		t.Fatal(err)
	}
	if err := cb.store.SetCertificateUses(ctx, records.PluginCertificateUse, "inbox", []int64{1}); err != nil {
		t.Fatal(err)
	}
	detail := cb.get(t, "/ui/certificates/1", http.StatusOK)
	for _, want := range []string{"as2 remote profile: <span class=\"mono\">acme</span>", `href="/ui/plugins/file-writer/inbox"`} {
		if !strings.Contains(detail, want) {
			t.Errorf("used by lacks %q\n%s", want, detail)
		}
	}

	wantRedirect(t, cb.post(t, "/ui/certificates/1/delete", nil), "/ui/certificates/1")
	if body := cb.get(t, "/ui/certificates/1", http.StatusOK); !strings.Contains(body, "Not deleted: the certificate is in use.") {
		t.Errorf("no refusal flash\n%s", body)
	}
	if _, err := cb.store.GetCertificate(ctx, 1); err != nil {
		t.Fatalf("certificate in use was deleted: %v", err)
	}

	wantRedirect(t, cb.post(t, "/ui/certificates/2/delete", nil), "/ui/certificates")
	if body := cb.get(t, "/ui/certificates", http.StatusOK); !strings.Contains(body, "Certificate deleted.") || strings.Contains(body, "/ui/certificates/2") {
		t.Errorf("after delete:\n%s", body)
	}
}

func TestCertificatePagesNotFoundAndCSRF(t *testing.T) {
	cb := setupConfigPages(t)
	leaf := certstest.ValidLeaf(t, certstest.CA(t, "Test CA"), "a.example", certstest.ECKey(t))
	for _, path := range []string{"/ui/certificates/99", "/ui/certificates/abc", "/ui/certificates/0", "/ui/certificates/-1"} {
		cb.get(t, path, http.StatusNotFound)
	}
	if r := cb.post(t, "/ui/certificates/99/delete", nil); r.status != http.StatusNotFound {
		t.Errorf("delete of a missing certificate = %d, want 404", r.status)
	}

	if r := cb.upload(t, "/ui/certificates", nil, certstest.CertsPEM(leaf.Cert), false); r.status != http.StatusForbidden {
		t.Errorf("upload without CSRF token = %d, want 403", r.status)
	}
	if n, _ := certCount(t, cb); n != 0 {
		t.Fatalf("an upload without CSRF token stored %d certificates", n)
	}
	wantRedirect(t, cb.upload(t, "/ui/certificates", nil, certstest.CertsPEM(leaf.Cert), true), "/ui/certificates/1")
	if r := cb.c.post(t, "/ui/certificates/1/delete", url.Values{}); r.status != http.StatusForbidden {
		t.Errorf("delete without CSRF token = %d, want 403", r.status)
	}
	if n, _ := certCount(t, cb); n != 1 {
		t.Error("a delete without CSRF token deleted")
	}
}

func certCount(t *testing.T, cb *configBundle) (int, error) {
	t.Helper()
	_, total, err := cb.store.ListCertificates(context.Background(), persistence.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	return total, nil
}
