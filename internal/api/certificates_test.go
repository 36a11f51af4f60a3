package api

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
)

// uploadCertificate posts a certificate file with the given extra fields.
func (b *bundle) uploadCertificate(file []byte, fields ...part) response {
	b.t.Helper()
	parts := append([]part{{name: "file", fileName: "upload.bin", value: string(file)}}, fields...)
	body, ct := multipartBody(b.t, parts)
	return b.send(http.MethodPost, "/api/v1/certificates", body, ct, withHeader("X-Requested-With", "test"))
}

type createdCertificates struct {
	Certificates []certificateCreated `json:"certificates"`
}

func (b *bundle) certificateCount() int {
	b.t.Helper()
	_, total, err := b.store.ListCertificates(context.Background(), persistence.ListOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	return total
}

func TestCertificateUploadFormats(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		ca := certstest.CA(t, "Upload CA")
		rsaKey := certstest.RSAKey(t)
		ecKey := certstest.ECKey(t)
		pemLeaf := certstest.ValidLeaf(t, ca, "pem leaf", rsaKey)
		derLeaf := certstest.ValidLeaf(t, ca, "der leaf", certstest.ECKey(t))
		p12Leaf := certstest.ValidLeaf(t, ca, "p12 leaf", ecKey)
		p12CA := certstest.CA(t, "PKCS12 CA")
		p12Chained := certstest.ValidLeaf(t, p12CA, "p12 chained", certstest.RSAKey(t))

		type want struct {
			subject string
			key     bool
		}
		cases := []struct {
			name   string
			file   []byte
			fields []part
			want   []want
		}{
			{name: "PEM chain with PKCS#1 key",
				file: append(certstest.CertsPEM(pemLeaf.Cert, ca.Cert), certstest.KeyPEM(t, rsaKey, certstest.PKCS1)...),
				want: []want{{"CN=pem leaf,O=Wharf Test", true}, {"CN=Upload CA,O=Wharf Test", false}}},
			{name: "DER", file: derLeaf.Cert.Raw, want: []want{{"CN=der leaf,O=Wharf Test", false}}},
			{name: "PKCS#12 from openssl", file: certstest.OpenSSLPKCS12(t, p12Leaf, nil, "pass word"),
				fields: []part{{name: "password", value: "pass word"}, {name: "description", value: "our signing key"}},
				want:   []want{{"CN=p12 leaf,O=Wharf Test", true}}},
			{name: "PKCS#12 from openssl with chain", file: certstest.OpenSSLPKCS12(t, p12Chained, []*x509.Certificate{p12CA.Cert}, "pw"),
				fields: []part{{name: "password", value: "pw"}},
				want:   []want{{"CN=p12 chained,O=Wharf Test", true}, {"CN=PKCS12 CA,O=Wharf Test", false}}},
		}
		for _, tc := range cases {
			r := b.uploadCertificate(tc.file, tc.fields...)
			if r.status != http.StatusCreated {
				t.Fatalf("%s: upload = %d %s", tc.name, r.status, r.body)
			}
			var got createdCertificates
			r.json(t, &got)
			if len(got.Certificates) != len(tc.want) {
				t.Fatalf("%s: created %s", tc.name, r.body)
			}
			for i, w := range tc.want {
				c := got.Certificates[i]
				if c.ID == 0 || c.Subject != w.subject || c.HasPrivateKey != w.key || len(c.Fingerprint) != 64 || c.NotAfter.IsZero() {
					t.Errorf("%s: certificate %d = %+v, want %+v", tc.name, i, c, w)
				}
			}
			var raw map[string][]map[string]any
			r.json(t, &raw)
			for k := range raw["certificates"][0] {
				if !strings.Contains(" id fingerprint subject not_after has_private_key ", " "+k+" ") {
					t.Errorf("%s: unexpected property %s", tc.name, k)
				}
			}
		}
		if n := b.certificateCount(); n != 6 {
			t.Errorf("%d certificates stored, want 6", n)
		}
	})
}

func TestCertificateUploadRefusals(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		ca := certstest.CA(t, "Refusal CA")
		key := certstest.RSAKey(t)
		leaf := certstest.ValidLeaf(t, ca, "leaf", key)
		const password = "correct horse"
		p12 := certstest.OpenSSLPKCS12(t, leaf, []*x509.Certificate{ca.Cert}, password)

		cases := []struct {
			name   string
			file   []byte
			fields []part
			field  string
		}{
			{name: "wrong password", file: p12, fields: []part{{name: "password", value: "battery staple"}}, field: "password"},
			{name: "no password", file: p12, field: "password"},
			{name: "key of another certificate", file: append(certstest.CertsPEM(leaf.Cert), certstest.KeyPEM(t, certstest.RSAKey(t), certstest.PKCS8)...), field: "file"},
			{name: "garbage", file: []byte("\x00\x01 definitely not a certificate"), field: "file"},
			{name: "key alone", file: certstest.KeyPEM(t, key, certstest.PKCS8), field: "file"},
			{name: "unknown field", file: leaf.Cert.Raw, fields: []part{{name: "owner", value: "x"}}, field: "owner"},
			{name: "description with a control character", file: leaf.Cert.Raw, fields: []part{{name: "description", value: "a\tb"}}, field: "description"},
		}
		for _, tc := range cases {
			r := b.uploadCertificate(tc.file, tc.fields...)
			if r.status != http.StatusBadRequest {
				t.Fatalf("%s: upload = %d %s, want 400", tc.name, r.status, r.body)
			}
			if strings.Contains(string(r.body), "battery staple") {
				t.Errorf("%s: the answer shows the password: %s", tc.name, r.body)
			}
			e := r.errorOf(t)
			if e.Code != "INVALID_INPUT" || e.Details[tc.field] == nil {
				t.Errorf("%s: error %+v does not name %s", tc.name, e, tc.field)
			}
		}

		body, ct := multipartBody(t, []part{{name: "description", value: "no file"}})
		r := b.send(http.MethodPost, "/api/v1/certificates", body, ct, withHeader("X-Requested-With", "test"))
		if e := r.errorOf(t); r.status != 400 || e.Details["file"] == nil {
			t.Errorf("upload without file = %d %s", r.status, r.body)
		}
		body, ct = multipartBody(t, []part{{name: "file", fileName: "c.der", value: string(leaf.Cert.Raw)}})
		if r := b.send(http.MethodPost, "/api/v1/certificates", body, ct); r.status != 400 {
			t.Errorf("upload without X-Requested-With = %d %s", r.status, r.body)
		}
		if r := b.do("POST", "/api/v1/certificates", `{"file":"x"}`); r.status != 415 {
			t.Errorf("JSON upload = %d %s", r.status, r.body)
		}

		// The same certificate is stored once: an upload repeating one stores nothing of it.
		r = b.uploadCertificate(append(certstest.CertsPEM(leaf.Cert), certstest.KeyPEM(t, key, certstest.PKCS8)...))
		if r.status != http.StatusCreated {
			t.Fatalf("first upload = %d %s", r.status, r.body)
		}
		r = b.uploadCertificate(p12, part{name: "password", value: password})
		if e := r.errorOf(t); r.status != http.StatusConflict || e.Code != "CERTIFICATE_EXISTS" ||
			!strings.Contains(e.Message, certs.Fingerprint(leaf.Cert.Raw)) {
			t.Errorf("repeated upload = %d %s, want 409 CERTIFICATE_EXISTS naming the fingerprint", r.status, r.body)
		}
		if n := b.certificateCount(); n != 1 {
			t.Errorf("%d certificates stored after the refused upload, want 1 (the chain's CA not added)", n)
		}

		for _, secret := range []string{password, "battery staple"} {
			if strings.Contains(b.logs.String(), secret) {
				t.Errorf("the log shows a password:\n%s", b.logs.String())
			}
		}
	})
}

func TestCertificateListDetailAndDelete(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		ca := certstest.CA(t, "List CA")
		key := certstest.RSAKey(t)
		leaf := certstest.ValidLeaf(t, ca, "current", key)
		old := certstest.Leaf(t, ca, "old", certstest.ECKey(t), time.Now().Add(-60*24*time.Hour), time.Now().Add(-36*time.Hour))

		var created createdCertificates
		r := b.uploadCertificate(append(certstest.CertsPEM(leaf.Cert), certstest.KeyPEM(t, key, certstest.PKCS8)...),
			part{name: "description", value: "signing"})
		r.json(t, &created)
		leafID := created.Certificates[0].ID
		if loc := r.header.Get("Location"); loc != "/api/v1/certificates/"+strconv.FormatInt(leafID, 10) {
			t.Errorf("Location = %q", loc)
		}
		b.uploadCertificate(old.Cert.Raw).json(t, &created)
		oldID := created.Certificates[0].ID

		var list struct {
			Certificates []certificateView `json:"certificates"`
			Total        int               `json:"total"`
			Limit        int               `json:"limit"`
			Offset       int               `json:"offset"`
		}
		b.must(200, "GET", "/api/v1/certificates", "").json(t, &list)
		if list.Total != 2 || list.Limit != 100 || len(list.Certificates) != 2 {
			t.Fatalf("list = %+v", list)
		}
		expired, current := list.Certificates[0], list.Certificates[1]
		if expired.ID != oldID || !expired.Expired || expired.DaysLeft != -2 || expired.HasPrivateKey {
			t.Errorf("expired certificate = %+v", expired)
		}
		if current.ID != leafID || current.Expired || current.DaysLeft < 363 || !current.HasPrivateKey ||
			current.Description != "signing" || current.Issuer != "CN=List CA,O=Wharf Test" ||
			current.SerialNumber != leaf.Cert.SerialNumber.Text(16) || current.NotBefore.IsZero() {
			t.Errorf("current certificate = %+v", current)
		}

		if err := b.store.SetCertificateUses(ctx, "as2_remote_profile", "acme", []int64{leafID}); err != nil {
			t.Fatal(err)
		}
		var d certificateDetail
		r = b.must(200, "GET", "/api/v1/certificates/"+strconv.FormatInt(leafID, 10), "")
		r.json(t, &d)
		if len(d.UsedBy) != 1 || d.UsedBy[0] != (certificateUseView{Kind: "as2_remote_profile", Name: "acme"}) {
			t.Errorf("used_by = %+v", d.UsedBy)
		}
		block, rest := pem.Decode([]byte(d.PEM))
		if block == nil || block.Type != "CERTIFICATE" || string(block.Bytes) != string(leaf.Cert.Raw) || len(rest) != 0 {
			t.Errorf("pem = %q", d.PEM)
		}
		if strings.Contains(string(r.body), "PRIVATE KEY") || strings.Contains(string(r.body), "sealed") {
			t.Errorf("detail shows the key: %s", r.body)
		}

		path := "/api/v1/certificates/" + strconv.FormatInt(leafID, 10)
		if e := b.must(409, "DELETE", path, "").errorOf(t); e.Code != "CERTIFICATE_IN_USE" || !strings.Contains(e.Message, "acme") {
			t.Errorf("delete in use: %+v", e)
		}
		if err := b.store.SetCertificateUses(ctx, "as2_remote_profile", "acme", nil); err != nil {
			t.Fatal(err)
		}
		b.must(204, "DELETE", path, "")
		b.must(404, "GET", path, "")
		b.must(404, "DELETE", path, "")
		b.must(400, "GET", "/api/v1/certificates/zero", "")
	})
}

// TestUploadedKeyIsSealedAndOpens checks that the stored key is not the key in the clear
// and that the master key opens it into a signer for the certificate.
func TestUploadedKeyIsSealedAndOpens(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		ca := certstest.CA(t, "Seal CA")
		key := certstest.RSAKey(t)
		leaf := certstest.ValidLeaf(t, ca, "sealed", key)
		var created createdCertificates
		r := b.uploadCertificate(certstest.OpenSSLPKCS12(t, leaf, nil, "pw"), part{name: "password", value: "pw"})
		r.json(t, &created)
		if len(created.Certificates) != 1 {
			t.Fatalf("upload = %d %s", r.status, r.body)
		}
		id := created.Certificates[0].ID
		stored, err := b.store.GetCertificate(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
		if len(stored.SealedKey) == 0 || strings.Contains(string(stored.SealedKey), string(keyDER)) ||
			strings.Contains(string(stored.SealedKey), string(x509.MarshalPKCS1PrivateKey(key))) {
			t.Fatal("the stored key is not sealed")
		}
		_, signer, err := certs.NewOpener(b.store, b.sealer).Signer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		digest := sha256.Sum256([]byte("payload"))
		sig, err := signer.Sign(rand.Reader, digest[:], crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		if err := leaf.Cert.CheckSignature(x509.SHA256WithRSA, []byte("payload"), sig); err != nil {
			t.Errorf("signature does not verify with the certificate: %v", err)
		}
	})
}
