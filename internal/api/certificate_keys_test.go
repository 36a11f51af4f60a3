package api

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"strconv"
	"strings"
	"testing"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
)

func TestGenerateCertificate(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		for _, alg := range certs.AllKeyAlgorithms {
			r := b.must(201, "POST", "/api/v1/certificates/generate",
				`{"algorithm":"`+string(alg)+`","subject":{"common_name":"gen `+string(alg)+`","organization":"Example","country":"NL"},"validity_days":90}`)
			var c certificateCreated
			r.json(t, &c)
			if !c.HasPrivateKey || c.Subject != "CN=gen "+string(alg)+",O=Example,C=NL" {
				t.Fatalf("%s: created %+v", alg, c)
			}
			if r.header.Get("Location") != "/api/v1/certificates/"+strconv.FormatInt(c.ID, 10) {
				t.Fatalf("Location %q", r.header.Get("Location"))
			}
			var v certificateView
			b.must(200, "GET", "/api/v1/certificates/"+strconv.FormatInt(c.ID, 10), "").json(t, &v)
			if v.Role != "ours" || v.DaysLeft < 89 || v.DaysLeft > 90 {
				t.Fatalf("%s: view %+v", alg, v)
			}
		}
		r := b.do("POST", "/api/v1/certificates/generate", `{"algorithm":"dsa","subject":{"country":"nl"},"validity_days":0}`)
		e := r.errorOf(t)
		if r.status != 400 {
			t.Fatalf("status %d", r.status)
		}
		for _, f := range []string{"algorithm", "subject.common_name", "subject.country", "validity_days"} {
			if e.Details[f] == nil {
				t.Errorf("no error for %s in %+v", f, e.Details)
			}
		}
		if n := b.certificateCount(); n != len(certs.AllKeyAlgorithms) {
			t.Fatalf("%d certificates stored", n)
		}
	})
}

func TestCertificateRequestAndCAAnswer(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		var own certificateCreated
		b.must(201, "POST", "/api/v1/certificates/generate", `{"subject":{"common_name":"our-as2"}}`).json(t, &own)
		id := strconv.FormatInt(own.ID, 10)
		r := b.must(200, "GET", "/api/v1/certificates/"+id+"/csr", "")
		if r.header.Get("Content-Type") != "application/pkcs10" || !strings.Contains(r.header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("headers %v", r.header)
		}
		blk, _ := pem.Decode(r.body)
		if blk == nil || blk.Type != "CERTIFICATE REQUEST" {
			t.Fatalf("body %q", r.body)
		}
		csr, err := x509.ParseCertificateRequest(blk.Bytes)
		if err != nil || csr.CheckSignature() != nil || csr.Subject.CommonName != "our-as2" {
			t.Fatalf("request %v %v", csr.Subject, err)
		}

		// The CA signs the request; its certificate, uploaded alone, joins the stored key.
		ca := certstest.CA(t, "Answering CA")
		issued := certstest.Issue(t, ca, csr.Subject, csr.PublicKey)
		up := b.uploadCertificate(certstest.CertsPEM(issued))
		if up.status != 201 {
			t.Fatalf("upload: %d %s", up.status, up.body)
		}
		var created createdCertificates
		up.json(t, &created)
		if len(created.Certificates) != 1 || !created.Certificates[0].HasPrivateKey {
			t.Fatalf("created %+v", created)
		}

		// A partner's certificate has no key of ours to sign with.
		partner := certstest.ValidLeaf(t, ca, "partner", certstest.ECKey(t))
		b.uploadCertificate(certstest.CertsPEM(partner.Cert)).json(t, &created)
		r = b.do("GET", "/api/v1/certificates/"+strconv.FormatInt(created.Certificates[0].ID, 10)+"/csr", "")
		if r.status != 409 || r.errorOf(t).Code != "NO_PRIVATE_KEY" {
			t.Fatalf("csr without key: %d %s", r.status, r.body)
		}
	})
}

func TestCertificateDownloads(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		var c certificateCreated
		b.must(201, "POST", "/api/v1/certificates/generate", `{"subject":{"common_name":"download me"}}`).json(t, &c)
		stored, err := b.store.GetCertificate(t.Context(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		id := strconv.FormatInt(c.ID, 10)
		der := b.must(200, "GET", "/api/v1/certificates/"+id+"/der", "")
		if !bytes.Equal(der.body, stored.DER) || der.header.Get("Content-Type") != "application/pkix-cert" ||
			!strings.Contains(der.header.Get("Content-Disposition"), `filename=certificate-`+id+`.cer`) {
			t.Fatalf("DER download: %v", der.header)
		}
		p := b.must(200, "GET", "/api/v1/certificates/"+id+"/pem", "")
		blk, rest := pem.Decode(p.body)
		if blk == nil || blk.Type != "CERTIFICATE" || !bytes.Equal(blk.Bytes, stored.DER) || len(bytes.TrimSpace(rest)) != 0 {
			t.Fatalf("PEM download %q", p.body)
		}
		if bytes.Contains(p.body, []byte("PRIVATE")) {
			t.Fatal("the key left the server")
		}
		b.must(404, "GET", "/api/v1/certificates/999/der", "")
	})
}

func TestCertificateUploadKeyFileAndPartner(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		ca := certstest.CA(t, "Key file CA")
		key := certstest.RSAKey(t)
		leaf := certstest.ValidLeaf(t, ca, "with key file", key)
		other := certstest.RSAKey(t)

		r := b.uploadCertificate(certstest.CertsPEM(leaf.Cert), part{name: "key", fileName: "key.pem", value: string(certstest.KeyPEM(t, other, certstest.PKCS8))})
		if r.status != 400 || r.errorOf(t).Details["key"] == nil {
			t.Fatalf("mismatched key file: %d %s", r.status, r.body)
		}
		r = b.uploadCertificate(certstest.CertsPEM(leaf.Cert), part{name: "key", fileName: "key.pem", value: string(certstest.KeyPEM(t, key, certstest.PKCS8))},
			part{name: "partner", value: "true"})
		if r.status != 400 || r.errorOf(t).Details["file"] != certs.OwnAsPartner {
			t.Fatalf("own certificate as a partner's: %d %s", r.status, r.body)
		}
		if n := b.certificateCount(); n != 0 {
			t.Fatalf("%d certificates stored by refused uploads", n)
		}
		r = b.uploadCertificate(certstest.CertsPEM(leaf.Cert), part{name: "key", fileName: "key.pem", value: string(certstest.KeyPEM(t, key, certstest.PKCS1))})
		var created createdCertificates
		r.json(t, &created)
		if r.status != 201 || !created.Certificates[0].HasPrivateKey {
			t.Fatalf("key file: %d %s", r.status, r.body)
		}
		partner := certstest.ValidLeaf(t, ca, "partner", certstest.ECKey(t))
		r = b.uploadCertificate(certstest.CertsPEM(partner.Cert), part{name: "partner", value: "true"})
		if r.status != 201 {
			t.Fatalf("partner upload: %d %s", r.status, r.body)
		}
		list, _, err := b.store.ListCertificates(t.Context(), persistence.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]certs.Role{}
		for _, c := range list {
			roles[c.Subject] = certs.RoleOf(c)
		}
		if roles["CN=partner,O=Wharf Test"] != certs.RolePartner || roles["CN=with key file,O=Wharf Test"] != certs.RoleOurs {
			t.Fatalf("roles %v", roles)
		}
	})
}
