package profile

import (
	"crypto/x509"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/cms"
)

func TestDirectoryResolves(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		ours, _ := rsaKeys(t)
		prev := e.validCert("wharf-old", ours, true)
		w.local.PreviousDecryptionCertificateID = &prev
		l, r := e.mustCreate(w)

		in, err := e.dir.Inbound(e.ctx, "ACME", "WHARF")
		if err != nil {
			t.Fatal(err)
		}
		if in.Local.Organization != l.Organization || in.Remote.Partner != r.Partner {
			t.Errorf("Inbound profiles = %s, %s", in.Local.Organization, in.Remote.Partner)
		}
		// The current key first, then the one being replaced.
		if len(in.Decryption) != 2 || !certIs(e, in.Decryption[0].Certificate, w.ourCert) || !certIs(e, in.Decryption[1].Certificate, prev) {
			t.Errorf("Decryption = %v", in.Decryption)
		}
		for _, rc := range in.Decryption {
			if rc.Key == nil {
				t.Errorf("decryption key of %s not opened", rc.Certificate.Subject)
			}
		}
		if len(in.PartnerCertificates) != 1 || !certIs(e, in.PartnerCertificates[0], w.theirCert) {
			t.Errorf("PartnerCertificates = %v", in.PartnerCertificates)
		}
		if in.Signer == nil || in.Signer.Key == nil || !certIs(e, in.Signer.Certificate, w.ourCert) || in.Signer.Digest != cms.SHA256 ||
			in.Signer.AlgorithmProtection {
			t.Errorf("Signer = %+v", in.Signer)
		}

		byParties, err := e.dir.InboundByParties(e.ctx, "local", "acme")
		if err != nil || byParties.Local.AS2ID != "WHARF" || byParties.Remote.AS2ID != "ACME" || len(byParties.Decryption) != 2 {
			t.Errorf("InboundByParties = %+v, %v", byParties, err)
		}

		out, err := e.dir.Outbound(e.ctx, "local", "acme")
		if err != nil {
			t.Fatal(err)
		}
		if out.Signer == nil || !certIs(e, out.Signer.Certificate, w.ourCert) || out.Signer.Digest != cms.SHA256 ||
			out.Signer.AlgorithmProtection {
			t.Errorf("Outbound Signer = %+v", out.Signer)
		}
		if !certIs(e, out.EncryptTo, w.theirCert) || len(out.PartnerCertificates) != 1 {
			t.Errorf("Outbound EncryptTo = %v, partner certificates %d", out.EncryptTo, len(out.PartnerCertificates))
		}
		if out.Roots != nil {
			t.Errorf("Roots set without TLS trust")
		}
	})
}

func TestDirectoryOverridesAndTrust(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		ours, _ := rsaKeys(t)
		special := e.validCert("wharf-for-acme", ours, true)
		tlsCA := certstest.CA(t, "ACME TLS CA")
		trustID := e.storeCA(tlsCA)
		w.remote.OurSigningCertificateID, w.remote.OurDecryptionCertificateID = &special, &special
		w.remote.TLSTrustCertificateIDs = []int64{trustID}
		w.remote.SigningAlgorithm = SignSHA384
		w.remote.AlgorithmProtection = true
		e.mustCreate(w)

		in, err := e.dir.Inbound(e.ctx, "ACME", "WHARF")
		if err != nil {
			t.Fatal(err)
		}
		// The partner's override first, the organization's own key still accepted.
		if len(in.Decryption) != 2 || !certIs(e, in.Decryption[0].Certificate, special) || !certIs(e, in.Decryption[1].Certificate, w.ourCert) {
			t.Errorf("Decryption = %v", in.Decryption)
		}
		if !certIs(e, in.Signer.Certificate, special) || in.Signer.Digest != cms.SHA384 || !in.Signer.AlgorithmProtection {
			t.Errorf("Inbound Signer = %+v", in.Signer)
		}
		out, err := e.dir.Outbound(e.ctx, "local", "acme")
		if err != nil {
			t.Fatal(err)
		}
		if !certIs(e, out.Signer.Certificate, special) || out.Signer.Digest != cms.SHA384 || !out.Signer.AlgorithmProtection {
			t.Errorf("Outbound Signer = %+v", out.Signer)
		}
		if out.Roots == nil {
			t.Fatal("Roots is nil with TLS trust")
		}
		leaf := certstest.ValidLeaf(t, tlsCA, "as2.acme.example", certstest.ECKey(t))
		if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: out.Roots}); err != nil {
			t.Errorf("a certificate of the trusted CA does not verify: %v", err)
		}
	})
}

func TestDirectoryRollover(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		_, theirs := rsaKeys(t)
		now := time.Now()
		older := w.theirCert
		newer, _ := e.cert("acme-2026", theirs, now.Add(-time.Hour), now.Add(2*365*24*time.Hour), false)
		future, _ := e.cert("acme-future", theirs, now.Add(30*24*time.Hour), now.Add(3*365*24*time.Hour), false)
		expired, _ := e.cert("acme-expired", theirs, now.Add(-2*365*24*time.Hour), now.Add(-time.Hour), false)
		w.remote.PartnerCertificateIDs = []int64{expired, future, newer, older}
		e.mustCreate(w)

		out, err := e.dir.Outbound(e.ctx, "local", "acme")
		if err != nil {
			t.Fatal(err)
		}
		if !certIs(e, out.EncryptTo, newer) {
			t.Errorf("EncryptTo = %s, want the newest valid certificate", out.EncryptTo.Subject)
		}
		if len(out.PartnerCertificates) != 4 {
			t.Errorf("every partner certificate verifies MDNs; got %d", len(out.PartnerCertificates))
		}

		// Once the future certificate starts, it takes over.
		e.dir.now = func() time.Time { return now.Add(31 * 24 * time.Hour) }
		e.dir.Invalidate()
		if out, err = e.dir.Outbound(e.ctx, "local", "acme"); err != nil || !certIs(e, out.EncryptTo, future) {
			t.Errorf("EncryptTo after the future certificate's start = %v, %v", out.EncryptTo, err)
		}

		// With only an expired certificate there is nothing to encrypt to.
		r := w.remote
		r.PartnerCertificateIDs = []int64{expired}
		if _, err := e.store.UpdateRemote(e.ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := e.dir.Outbound(e.ctx, "local", "acme"); err == nil || !strings.Contains(err.Error(), "valid") {
			t.Errorf("Outbound with an expired certificate: %v", err)
		}
	})
}

func TestDirectoryCache(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		e.mustCreate(w)
		now := time.Now()
		e.dir.now = func() time.Time { return now }

		first, err := e.dir.Inbound(e.ctx, "ACME", "WHARF")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.dir.Outbound(e.ctx, "local", "acme"); err != nil {
			t.Fatal(err)
		}
		_, err = e.dir.Inbound(e.ctx, "NOBODY", "WHARF")
		if !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("unknown AS2 id: %v", err)
		}
		reads := e.sql.reads.Load()
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.dir.Inbound(e.ctx, "ACME", "WHARF"); err != nil {
					t.Error(err)
				}
				if _, err := e.dir.Outbound(e.ctx, "local", "acme"); err != nil {
					t.Error(err)
				}
				if _, err := e.dir.Inbound(e.ctx, "NOBODY", "WHARF"); !errors.Is(err, persistence.ErrNotFound) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := e.sql.reads.Load() - reads; n != 0 {
			t.Errorf("cached resolutions read the database %d times", n)
		}

		// A write through the store is seen at once.
		r := w.remote
		r.EndpointURL = "https://new.acme.example/as2"
		if _, err := e.store.UpdateRemote(e.ctx, r); err != nil {
			t.Fatal(err)
		}
		in, err := e.dir.Inbound(e.ctx, "ACME", "WHARF")
		if err != nil || in.Remote.EndpointURL != r.EndpointURL || first.Remote.EndpointURL == r.EndpointURL {
			t.Errorf("after update: endpoint %q, %v", in.Remote.EndpointURL, err)
		}
		// So is a new profile that was missing before.
		e.party(persistence.PartyPartner, "nobody")
		n := w.remote
		n.Partner, n.AS2ID = "nobody", "NOBODY"
		if _, err := e.store.CreateRemote(e.ctx, n); err != nil {
			t.Fatal(err)
		}
		if in, err := e.dir.Inbound(e.ctx, "NOBODY", "WHARF"); err != nil || in.Remote.Partner != "nobody" {
			t.Errorf("after create: %v, %v", in.Remote.Partner, err)
		}

		// A write by another process is seen once the entry is CacheTTL old.
		if _, err := e.dir.Inbound(e.ctx, "ACME", "WHARF"); err != nil {
			t.Fatal(err)
		}
		if err := e.sql.Write(e.ctx, func(tx module.Tx) error {
			_, err := tx.Exec(e.ctx, `UPDATE as2_remote_profiles SET endpoint_url = ? WHERE partner = ?`, "https://other.acme.example/as2", "acme")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		e.dir.now = func() time.Time { return now.Add(CacheTTL - time.Second) }
		if in, _ := e.dir.Inbound(e.ctx, "ACME", "WHARF"); in.Remote.EndpointURL != r.EndpointURL {
			t.Errorf("entry younger than CacheTTL re-read: %q", in.Remote.EndpointURL)
		}
		e.dir.now = func() time.Time { return now.Add(CacheTTL) }
		if in, _ := e.dir.Inbound(e.ctx, "ACME", "WHARF"); in.Remote.EndpointURL != "https://other.acme.example/as2" {
			t.Errorf("entry CacheTTL old not re-read: %q", in.Remote.EndpointURL)
		}
	})
}

func TestDirectoryNotFound(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		e.mustCreate(w)
		e.party(persistence.PartyOrganization, "bare")
		tests := []struct {
			name string
			call func() error
			want string
		}{
			{"unknown from", func() error { _, err := e.dir.Inbound(e.ctx, "GHOST", "WHARF"); return err }, `"GHOST"`},
			{"unknown to", func() error { _, err := e.dir.Inbound(e.ctx, "ACME", "GHOST"); return err }, `"GHOST"`},
			{"org without profile", func() error { _, err := e.dir.Outbound(e.ctx, "bare", "acme"); return err }, `"bare"`},
			{"partner without profile", func() error { _, err := e.dir.Outbound(e.ctx, "local", "globex"); return err }, `"globex"`},
			{"by parties", func() error { _, err := e.dir.InboundByParties(e.ctx, "local", "globex"); return err }, `"globex"`},
			{"bad party name", func() error { _, err := e.dir.InboundByParties(e.ctx, "Local", "acme"); return err }, `"Local"`},
		}
		for _, tt := range tests {
			err := tt.call()
			if !errors.Is(err, persistence.ErrNotFound) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: %v, want ErrNotFound naming %s", tt.name, err, tt.want)
			}
		}
	})
}

func TestDirectoryOutboundNeedsSigningKey(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		w.local.SigningCertificateID = 0
		e.mustCreate(w)
		if _, err := e.dir.Outbound(e.ctx, "local", "acme"); err == nil || errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("signing without a signing certificate: %v", err)
		}
		in, err := e.dir.Inbound(e.ctx, "ACME", "WHARF")
		if err != nil || in.Signer != nil {
			t.Errorf("Inbound without a signing certificate: signer %v, %v", in.Signer, err)
		}
	})
}

func TestEncryptionCertificate(t *testing.T) {
	ca := certstest.CA(t, "CA")
	_, theirs := rsaKeys(t)
	now := time.Now()
	mk := func(from, to time.Duration) *x509.Certificate {
		return certstest.Leaf(t, ca, "p", theirs, now.Add(from), now.Add(to)).Cert
	}
	day := 24 * time.Hour
	old, newer, future, expired := mk(-300*day, 60*day), mk(-day, 400*day), mk(day, 500*day), mk(-400*day, -day)
	ec := certstest.Leaf(t, ca, "ec", certstest.ECKey(t), now.Add(-time.Hour), now.Add(day)).Cert
	tests := []struct {
		name  string
		certs []*x509.Certificate
		want  *x509.Certificate
	}{
		{"none", nil, nil},
		{"one", []*x509.Certificate{old}, old},
		{"newest wins", []*x509.Certificate{old, newer}, newer},
		{"order does not matter", []*x509.Certificate{newer, old}, newer},
		{"not yet valid skipped", []*x509.Certificate{future, old}, old},
		{"expired skipped", []*x509.Certificate{expired}, nil},
		{"EC skipped", []*x509.Certificate{ec, old}, old},
	}
	for _, tt := range tests {
		if got := EncryptionCertificate(tt.certs, now); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// certIs reports whether c is the stored certificate id.
func certIs(e *env, c *x509.Certificate, id int64) bool {
	e.t.Helper()
	if c == nil {
		return false
	}
	rec, err := e.core.GetCertificate(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(rec.DER) == string(c.Raw)
}
