package profile

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// storePair stores a certificate, with its private key when withKey.
func (e *env) storePair(p certstest.Pair, withKey bool) int64 {
	e.t.Helper()
	parsed := certs.Parsed{Cert: p.Cert}
	if withKey {
		parsed.Key = p.Key
	}
	recs, err := certs.Records([]certs.Parsed{parsed}, p.Cert.Subject.CommonName, e.box)
	if err != nil {
		e.t.Fatal(err)
	}
	stored, err := e.core.CreateCertificates(e.ctx, recs)
	if err != nil {
		e.t.Fatal(err)
	}
	return stored[0].ID
}

func TestRemoteValidateTLSTrust(t *testing.T) {
	pin := strings.Repeat("0a", 32)
	tests := []struct {
		name  string
		edit  func(r *Remote)
		field string // "" for valid
	}{
		{"system", func(r *Remote) {}, ""},
		{"system with extra roots", func(r *Remote) { r.TLSTrustCertificateIDs = []int64{7} }, ""},
		{"profile roots", func(r *Remote) { r.TLSTrust, r.TLSTrustCertificateIDs = TLSTrustProfile, []int64{7} }, ""},
		{"pinned", func(r *Remote) { r.TLSTrust, r.TLSPinnedSHA256 = TLSTrustPinned, pin }, ""},
		{"unknown trust", func(r *Remote) { r.TLSTrust = "any" }, "tls_trust"},
		{"empty trust", func(r *Remote) { r.TLSTrust = "" }, "tls_trust"},
		{"profile without roots", func(r *Remote) { r.TLSTrust = TLSTrustProfile }, "tls_trust_certificate_ids"},
		{"pinned without pin", func(r *Remote) { r.TLSTrust = TLSTrustPinned }, "tls_pinned_sha256"},
		{"pinned with roots", func(r *Remote) {
			r.TLSTrust, r.TLSPinnedSHA256, r.TLSTrustCertificateIDs = TLSTrustPinned, pin, []int64{7}
		}, "tls_trust_certificate_ids"},
		{"pin without pinned", func(r *Remote) { r.TLSPinnedSHA256 = pin }, "tls_pinned_sha256"},
		{"short pin", func(r *Remote) { r.TLSTrust, r.TLSPinnedSHA256 = TLSTrustPinned, "0a0b" }, "tls_pinned_sha256"},
		{"not hex", func(r *Remote) { r.TLSTrust, r.TLSPinnedSHA256 = TLSTrustPinned, strings.Repeat("zz", 32) }, "tls_pinned_sha256"},
		{"upper case", func(r *Remote) { r.TLSTrust, r.TLSPinnedSHA256 = TLSTrustPinned, strings.Repeat("0A", 32) }, "tls_pinned_sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validRemote()
			tt.edit(&r)
			checkField(t, r.Validate(), tt.field)
		})
	}
}

func checkField(t *testing.T, err error, field string) {
	t.Helper()
	var fe *persistence.FieldError
	switch {
	case field == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case field != "" && (!errors.As(err, &fe) || fe.Field != field):
		t.Fatalf("error %v, want one naming %s", err, field)
	}
}

// The directory resolves each trust mode into what the client checks: profile roots
// alone, or a pin, given as tools print it and stored as lower-case hex.
func TestDirectoryTLSTrust(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		tlsCA := certstest.CA(t, "ACME TLS CA")
		w.remote.TLSTrust, w.remote.TLSTrustCertificateIDs = TLSTrustProfile, []int64{e.storeCA(tlsCA)}
		e.mustCreate(w)
		out, err := e.dir.Outbound(e.ctx, "local", "acme")
		if err != nil {
			t.Fatal(err)
		}
		alone := x509.NewCertPool()
		alone.AddCert(tlsCA.Cert)
		if out.Roots == nil || !out.Roots.Equal(alone) {
			t.Error("tls_trust profile does not trust the profile's roots alone")
		}

		leaf := certstest.ServerLeaf(t, tlsCA, "as2.acme.example", certstest.ECKey(t), "as2.acme.example")
		sum := sha256.Sum256(leaf.Cert.Raw)
		var printed []string
		for _, b := range sum {
			printed = append(printed, strings.ToUpper(hex.EncodeToString([]byte{b})))
		}
		w.remote.TLSTrust, w.remote.TLSTrustCertificateIDs = TLSTrustPinned, nil
		w.remote.TLSPinnedSHA256 = strings.Join(printed, ":")
		saved, err := e.store.UpdateRemote(e.ctx, w.remote)
		if err != nil {
			t.Fatal(err)
		}
		if saved.TLSPinnedSHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("stored pin %q, want lower-case hex", saved.TLSPinnedSHA256)
		}
		out, err = e.dir.Outbound(e.ctx, "local", "acme")
		if err != nil {
			t.Fatal(err)
		}
		conf := out.TLSConfig()
		if err := conf.VerifyConnection(tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf.Cert}}); err != nil {
			t.Errorf("pinned certificate refused: %v", err)
		}
		other := certstest.ServerLeaf(t, tlsCA, "as2.acme.example", certstest.ECKey(t), "as2.acme.example")
		if err := conf.VerifyConnection(tls.ConnectionState{PeerCertificates: []*x509.Certificate{other.Cert}}); !errors.Is(err, ErrPinMismatch) {
			t.Errorf("another certificate of the same CA: %v, want a pin mismatch", err)
		}
	})
}

// MDNs are signed with the MDN signing certificate when one is set, and with
// include_chain every signature carries the intermediates from the certificate store:
// openssl verifies the MDN against that certificate alone, and against the root alone.
func TestDirectoryMDNSignerAndChain(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		ours, theirs := rsaKeys(t)
		w := e.world()
		root := certstest.CA(t, "Wharf Root")
		inter := certstest.Intermediate(t, root, "Wharf Intermediate")
		sign := certstest.ValidLeaf(t, inter, "wharf-sign", ours)
		mdn := certstest.ValidLeaf(t, inter, "wharf-mdn", theirs)
		e.storePair(root, false)
		e.storePair(inter, false)
		signID, mdnID := e.storePair(sign, true), e.storePair(mdn, true)
		noKey := e.storePair(certstest.ValidLeaf(t, inter, "wharf-nokey", ours), false)

		// Refusals name the field.
		bad := w.local
		bad.MDNSigningCertificateID = &noKey
		if _, err := e.store.CreateLocal(e.ctx, bad); !isField(err, "mdn_signing_certificate_id") {
			t.Errorf("MDN signing certificate without a key: %v", err)
		}
		bad = w.local // signed by the test CA, which is not stored
		bad.IncludeChain = true
		if _, err := e.store.CreateLocal(e.ctx, bad); !isField(err, "include_chain") || !strings.Contains(err.Error(), "not in the certificate store") {
			t.Errorf("include_chain without the issuer stored: %v", err)
		}

		w.local.SigningCertificateID, w.local.MDNSigningCertificateID, w.local.IncludeChain = signID, &mdnID, true
		e.mustCreate(w)
		in, err := e.dir.Inbound(e.ctx, "ACME", "WHARF")
		if err != nil {
			t.Fatal(err)
		}
		if !in.Signer.Certificate.Equal(mdn.Cert) || len(in.Signer.Chain) != 1 || !in.Signer.Chain[0].Equal(inter.Cert) {
			t.Fatalf("MDN signer %s with chain %v, want wharf-mdn with the intermediate", in.Signer.Certificate.Subject, in.Signer.Chain)
		}
		out, err := e.dir.Outbound(e.ctx, "local", "acme")
		if err != nil {
			t.Fatal(err)
		}
		if !out.Signer.Certificate.Equal(sign.Cert) || len(out.Signer.Chain) != 1 || !out.Signer.Chain[0].Equal(inter.Cert) {
			t.Fatalf("message signer %s with chain %v, want wharf-sign with the intermediate", out.Signer.Certificate.Subject, out.Signer.Chain)
		}

		dir := t.TempDir()
		mdnPEM, _ := as2test.WritePEM(t, dir, mdn.Cert, mdn.Key)
		rootPEM, _ := as2test.WritePEM(t, dir, root.Cert, root.Key)
		signed := func(name string, s *mime.Signer) string {
			mic := mime.ComputeMIC([]byte("x"), cms.SHA256)
			ct, body, err := mime.BuildMDN(mime.MDN{ReportingUA: "Wharf", OriginalRecipient: "WHARF",
				OriginalMessageID: "<1@acme>", Disposition: mime.Processed(), ReceivedContentMIC: &mic},
				mime.MDNBuildOptions{Sign: s})
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(dir, name+".eml")
			if err := os.WriteFile(f, append([]byte("Content-Type: "+ct+"\r\n\r\n"), body...), 0o600); err != nil {
				t.Fatal(err)
			}
			return f
		}
		withChain := signed("chain", in.Signer)
		as2test.OpenSSL(t, "cms", "-verify", "-in", withChain, "-CAfile", mdnPEM, "-partial_chain", "-purpose", "any", "-out", os.DevNull)
		as2test.OpenSSL(t, "cms", "-verify", "-in", withChain, "-CAfile", rootPEM, "-purpose", "any", "-out", os.DevNull)
		// Without the chain, the root alone does not reach the signer.
		bare := *in.Signer
		bare.Chain = nil
		if b, err := exec.Command("openssl", "cms", "-verify", "-in", signed("bare", &bare), "-CAfile", rootPEM, "-purpose", "any", "-out", os.DevNull).CombinedOutput(); err == nil {
			t.Errorf("a signature without the chain verified against the root alone:\n%s", b)
		}
	})
}

func isField(err error, field string) bool {
	var fe *persistence.FieldError
	return errors.As(err, &fe) && fe.Field == field
}

// The partner form sets the trust like REST does, and refuses what REST refuses.
func TestRemoteFormTLSTrust(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		e.mustCreate(w)
		form := url.Values{}
		for _, f := range RemoteFields(w.remote) {
			form.Set(f.Name, f.Value)
		}
		form.Set("tls_trust", "pinned")
		form.Set("tls_pinned_sha256", strings.Repeat("AB:", 31)+"AB")
		got, err := e.store.SaveRemoteForm(e.ctx, "acme", form)
		if err != nil {
			t.Fatal(err)
		}
		if got.TLSTrust != TLSTrustPinned || got.TLSPinnedSHA256 != strings.Repeat("ab", 32) {
			t.Errorf("saved trust %s %q", got.TLSTrust, got.TLSPinnedSHA256)
		}
		form.Set("tls_pinned_sha256", "")
		if _, err := e.store.SaveRemoteForm(e.ctx, "acme", form); !isField(err, "tls_pinned_sha256") {
			t.Errorf("pinned without a pin: %v", err)
		}
	})
}
