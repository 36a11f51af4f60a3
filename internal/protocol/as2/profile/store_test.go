package profile

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/audit"
	"wharf/internal/certs/certstest"
	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

func TestStoreLocalCRUD(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		ours, _ := rsaKeys(t)
		prev := e.validCert("wharf-old", ours, true)
		w.local.PreviousDecryptionCertificateID = &prev
		w.local.MDNNotificationTo = "edi@wharf.example"

		created, err := e.store.CreateLocal(e.ctx, w.local)
		if err != nil {
			t.Fatal(err)
		}
		if created.CreatedAt.IsZero() || !created.UpdatedAt.Equal(created.CreatedAt) {
			t.Errorf("times = %v, %v", created.CreatedAt, created.UpdatedAt)
		}
		want := w.local
		want.CreatedAt, want.UpdatedAt = created.CreatedAt, created.UpdatedAt
		if !reflect.DeepEqual(created, want) {
			t.Errorf("created = %+v\nwant %+v", created, want)
		}
		for name, get := range map[string]func() (Local, error){
			"GetLocal":     func() (Local, error) { return e.store.GetLocal(e.ctx, "local") },
			"LocalByAS2ID": func() (Local, error) { return e.store.LocalByAS2ID(e.ctx, "WHARF") },
		} {
			got, err := get()
			if err != nil || !reflect.DeepEqual(got, created) {
				t.Errorf("%s = %+v, %v\nwant %+v", name, got, err, created)
			}
		}

		upd := created
		upd.AS2ID = "WHARF2"
		upd.PreviousDecryptionCertificateID = nil
		upd.MaxMessageSizeMiB = 64
		updated, err := e.store.UpdateLocal(e.ctx, upd)
		if err != nil {
			t.Fatal(err)
		}
		if updated.AS2ID != "WHARF2" || updated.PreviousDecryptionCertificateID != nil || updated.MaxMessageSizeMiB != 64 ||
			!updated.CreatedAt.Equal(created.CreatedAt) || updated.UpdatedAt.Before(created.UpdatedAt) {
			t.Errorf("updated = %+v", updated)
		}
		if _, err := e.store.LocalByAS2ID(e.ctx, "WHARF"); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("old AS2 id still found: %v", err)
		}

		e.party(persistence.PartyOrganization, "second")
		second := w.local
		second.Organization, second.AS2ID, second.PreviousDecryptionCertificateID = "second", "SECOND", nil
		if _, err := e.store.CreateLocal(e.ctx, second); err != nil {
			t.Fatal(err)
		}
		list, total, err := e.store.ListLocals(e.ctx, persistence.ListOptions{Limit: 1, Offset: 1})
		if err != nil || total != 2 || len(list) != 1 || list[0].Organization != "second" {
			t.Errorf("ListLocals = %+v, %d, %v", list, total, err)
		}

		if err := e.store.DeleteLocal(e.ctx, "local"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.GetLocal(e.ctx, "local"); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("GetLocal after delete: %v", err)
		}
		if err := e.store.DeleteLocal(e.ctx, "local"); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if _, err := e.store.UpdateLocal(e.ctx, upd); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("update after delete: %v", err)
		}
	})
}

func TestStoreRemoteCRUD(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		ours, theirs := rsaKeys(t)
		trust := e.validCert("acme-ca", certstest.ECKey(t), false)
		other := e.validCert("wharf-acme", ours, true)
		r := w.remote
		r.PartnerCertificateIDs = []int64{w.theirCert, e.validCert("acme-next", theirs, false)}
		r.OurSigningCertificateID, r.OurDecryptionCertificateID = &other, &other
		r.Compress, r.SignedMDN, r.AllowSHA1 = false, false, true
		r.AlgorithmProtection = true
		r.SigningAlgorithm, r.EncryptionAlgorithm, r.KeyTransport = SignSHA512, EncryptAES128GCM, KeyTransportOAEP
		r.MDNMode, r.MDNMICAlgorithm, r.MICPreference = MDNAsync, MICSHA384, MICPreferSignature
		r.AsyncMDNURL = "https://wharf.example/as2/mdn"
		r.AsyncMDNHosts = []string{"mdn.acme.example"}
		r.DuplicateFilename, r.DuplicateFilenameWindowH = DuplicateRefuse, 48
		r.GCMConfirmed, r.DuplicateContent, r.DuplicateContentWindowH = true, DuplicateWarn, 12
		r.ConnectTimeoutSeconds, r.RequestTimeoutSeconds, r.ReceiptTimeoutMinutes = 5, 60, 30
		r.Retry = delivery.RetryPolicy{Strategy: delivery.RetryFixed, Base: delivery.Duration(time.Minute), MaxRetries: ptr(4), Jitter: ptr(0.25)}
		r.TLSTrustCertificateIDs = []int64{trust}
		r.MaxMessageSizeMiB = 100

		created, err := e.store.CreateRemote(e.ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		want := r
		want.CreatedAt, want.UpdatedAt = created.CreatedAt, created.UpdatedAt
		if !reflect.DeepEqual(created, want) {
			t.Errorf("created = %+v\nwant %+v", created, want)
		}
		for name, get := range map[string]func() (Remote, error){
			"GetRemote":     func() (Remote, error) { return e.store.GetRemote(e.ctx, "acme") },
			"RemoteByAS2ID": func() (Remote, error) { return e.store.RemoteByAS2ID(e.ctx, "ACME") },
		} {
			got, err := get()
			if err != nil || !reflect.DeepEqual(got, created) {
				t.Errorf("%s = %+v, %v\nwant %+v", name, got, err, created)
			}
		}

		// Back to the defaults: nil lists read back as empty ones.
		plain := NewRemote()
		plain.Partner, plain.AS2ID, plain.EndpointURL = "acme", "ACME", "http://acme.example/as2"
		plain.PartnerCertificateIDs = []int64{w.theirCert}
		plain.AsyncMDNHosts, plain.TLSTrustCertificateIDs = nil, nil
		updated, err := e.store.UpdateRemote(e.ctx, plain)
		if err != nil {
			t.Fatal(err)
		}
		want = plain.normalized()
		want.CreatedAt, want.UpdatedAt = created.CreatedAt, updated.UpdatedAt
		if !reflect.DeepEqual(updated, want) {
			t.Errorf("updated = %+v\nwant %+v", updated, want)
		}

		list, total, err := e.store.ListRemotes(e.ctx, persistence.ListOptions{})
		if err != nil || total != 1 || len(list) != 1 || !reflect.DeepEqual(list[0], updated) {
			t.Errorf("ListRemotes = %+v, %d, %v", list, total, err)
		}
		if err := e.store.DeleteRemote(e.ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.RemoteByAS2ID(e.ctx, "ACME"); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("RemoteByAS2ID after delete: %v", err)
		}
		list, total, err = e.store.ListRemotes(e.ctx, persistence.ListOptions{})
		if err != nil || total != 0 || list == nil || len(list) != 0 {
			t.Errorf("ListRemotes after delete = %#v, %d, %v", list, total, err)
		}
	})
}

func TestStoreConflicts(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		e.mustCreate(w)
		e.party(persistence.PartyOrganization, "second")
		e.party(persistence.PartyPartner, "globex")

		wantConflict := func(what string, err error, code string) {
			t.Helper()
			var ae *module.APIError
			if !errors.Is(err, persistence.ErrConflict) || !errors.As(err, &ae) || ae.Code != code || ae.Status != 409 {
				t.Errorf("%s: %v, want %s", what, err, code)
			}
		}
		_, err := e.store.CreateLocal(e.ctx, w.local)
		wantConflict("second local profile", err, CodeProfileExists)
		_, err = e.store.CreateRemote(e.ctx, w.remote)
		wantConflict("second remote profile", err, CodeProfileExists)

		l := w.local
		l.Organization = "second"
		_, err = e.store.CreateLocal(e.ctx, l)
		wantConflict("local AS2 id", err, CodeAS2IDTaken)
		r := w.remote
		r.Partner = "globex"
		_, err = e.store.CreateRemote(e.ctx, r)
		wantConflict("remote AS2 id", err, CodeAS2IDTaken)

		// A local and a remote profile may share an AS2 id: they are looked up apart.
		r.AS2ID = "WHARF"
		if _, err := e.store.CreateRemote(e.ctx, r); err != nil {
			t.Fatalf("remote with a local's AS2 id: %v", err)
		}
		r.AS2ID = "ACME"
		_, err = e.store.UpdateRemote(e.ctx, r)
		wantConflict("update to a taken AS2 id", err, CodeAS2IDTaken)
		// The refused profile keeps what it had, certificate uses included.
		if got, _ := e.store.GetRemote(e.ctx, "globex"); got.AS2ID != "WHARF" {
			t.Errorf("globex AS2 id = %q", got.AS2ID)
		}
		if u := e.uses(w.theirCert); !slices.Equal(u, []string{"as2_remote_profile:acme", "as2_remote_profile:globex"}) {
			t.Errorf("uses = %v", u)
		}
		// AS2 ids compare exactly.
		r.AS2ID = "acme"
		if _, err := e.store.UpdateRemote(e.ctx, r); err != nil {
			t.Errorf("AS2 id differing in case: %v", err)
		}
	})
}

func TestStoreRefusesBadReferences(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		keyless := w.theirCert
		ecWithKey := e.validCert("ec", certstest.ECKey(t), true)
		ecPlain := e.validCert("ec-plain", certstest.ECKey(t), false)
		tests := []struct {
			name  string
			local func(l *Local)
			rem   func(r *Remote)
			field string
		}{
			{"missing organization", func(l *Local) { l.Organization = "nobody" }, nil, "organization"},
			{"partner as organization", func(l *Local) { l.Organization = "acme" }, nil, "organization"},
			{"missing signing certificate", func(l *Local) { l.SigningCertificateID = 999 }, nil, "signing_certificate_id"},
			{"signing without key", func(l *Local) { l.SigningCertificateID = keyless }, nil, "signing_certificate_id"},
			{"decryption without key", func(l *Local) { l.DecryptionCertificateID = keyless }, nil, "decryption_certificate_id"},
			{"decryption with an EC key", func(l *Local) { l.DecryptionCertificateID = ecWithKey }, nil, "decryption_certificate_id"},
			{"previous without key", func(l *Local) { l.PreviousDecryptionCertificateID = &keyless }, nil, "previous_decryption_certificate_id"},
			{"missing partner", nil, func(r *Remote) { r.Partner = "nobody" }, "partner"},
			{"organization as partner", nil, func(r *Remote) { r.Partner = "local" }, "partner"},
			{"missing partner certificate", nil, func(r *Remote) { r.PartnerCertificateIDs = []int64{keyless, 999} }, "partner_certificate_ids"},
			{"our own key-holding certificate as the partner's", nil, func(r *Remote) { r.PartnerCertificateIDs = []int64{w.ourCert} }, "partner_certificate_ids"},
			{"partner EC only, encrypting", nil, func(r *Remote) { r.PartnerCertificateIDs = []int64{ecPlain} }, "partner_certificate_ids"},
			{"our signing without key", nil, func(r *Remote) { r.OurSigningCertificateID = &keyless }, "our_signing_certificate_id"},
			{"our decryption without key", nil, func(r *Remote) { r.OurDecryptionCertificateID = &keyless }, "our_decryption_certificate_id"},
			{"missing trust", nil, func(r *Remote) { r.TLSTrustCertificateIDs = []int64{999} }, "tls_trust_certificate_ids"},
		}
		for _, tt := range tests {
			var err error
			if tt.local != nil {
				l := w.local
				tt.local(&l)
				_, err = e.store.CreateLocal(e.ctx, l)
			} else {
				r := w.remote
				tt.rem(&r)
				_, err = e.store.CreateRemote(e.ctx, r)
			}
			if fieldOf(err) != tt.field {
				t.Errorf("%s: %v, want a field error on %s", tt.name, err, tt.field)
			}
		}
		// Nothing was written, and no certificate is marked as used.
		if l, _, _ := e.store.ListLocals(e.ctx, persistence.ListOptions{}); len(l) != 0 {
			t.Errorf("locals written: %+v", l)
		}
		for _, id := range []int64{w.ourCert, w.theirCert, ecWithKey, ecPlain} {
			if u := e.uses(id); len(u) != 0 {
				t.Errorf("certificate %d used by %v", id, u)
			}
		}
		// An EC partner certificate is fine for signatures when we do not encrypt.
		r := w.remote
		r.PartnerCertificateIDs = []int64{ecPlain}
		r.EncryptionAlgorithm = EncryptNone
		if _, err := e.store.CreateRemote(e.ctx, r); err != nil {
			t.Errorf("EC partner certificate without encryption: %v", err)
		}
	})
}

func TestStoreCertificateUses(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		ours, theirs := rsaKeys(t)
		e.mustCreate(w)
		wantUses := func(id int64, want ...string) {
			t.Helper()
			if want == nil {
				want = []string{}
			}
			if got := e.uses(id); !slices.Equal(got, want) {
				t.Errorf("uses of certificate %d = %v, want %v", id, got, want)
			}
		}
		wantUses(w.ourCert, "as2_local_profile:local")
		wantUses(w.theirCert, "as2_remote_profile:acme")
		for _, id := range []int64{w.ourCert, w.theirCert} {
			if err := e.core.DeleteCertificate(e.ctx, id); !errors.Is(err, persistence.ErrInUse) {
				t.Errorf("delete certificate %d in use: %v", id, err)
			}
		}

		// Rolling over: the new certificates are used, the old ones released.
		newOurs := e.validCert("wharf-2", ours, true)
		newTheirs := e.validCert("acme-2", theirs, false)
		l := w.local
		l.SigningCertificateID, l.DecryptionCertificateID, l.PreviousDecryptionCertificateID = newOurs, newOurs, &w.ourCert
		if _, err := e.store.UpdateLocal(e.ctx, l); err != nil {
			t.Fatal(err)
		}
		r := w.remote
		r.PartnerCertificateIDs = []int64{newTheirs}
		if _, err := e.store.UpdateRemote(e.ctx, r); err != nil {
			t.Fatal(err)
		}
		wantUses(w.ourCert, "as2_local_profile:local")
		wantUses(newOurs, "as2_local_profile:local")
		wantUses(newTheirs, "as2_remote_profile:acme")
		wantUses(w.theirCert)
		if err := e.core.DeleteCertificate(e.ctx, w.theirCert); err != nil {
			t.Errorf("delete released certificate: %v", err)
		}

		// A write that fails leaves the uses as the stored profile has them.
		r.PartnerCertificateIDs = []int64{e.validCert("acme-3", theirs, false)}
		e.sql.failWrite.Store(true)
		if _, err := e.store.UpdateRemote(e.ctx, r); !errors.Is(err, errWriteRefused) {
			t.Fatalf("update with a failing write: %v", err)
		}
		e.party(persistence.PartyPartner, "globex")
		g := w.remote
		g.Partner, g.AS2ID, g.PartnerCertificateIDs = "globex", "GLOBEX", []int64{newTheirs}
		if _, err := e.store.CreateRemote(e.ctx, g); !errors.Is(err, errWriteRefused) {
			t.Fatalf("create with a failing write: %v", err)
		}
		e.sql.failWrite.Store(false)
		wantUses(newTheirs, "as2_remote_profile:acme")
		wantUses(r.PartnerCertificateIDs[0])

		if err := e.store.DeleteLocal(e.ctx, "local"); err != nil {
			t.Fatal(err)
		}
		if err := e.store.DeleteRemote(e.ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{w.ourCert, newOurs, newTheirs} {
			wantUses(id)
			if err := e.core.DeleteCertificate(e.ctx, id); err != nil {
				t.Errorf("delete certificate %d after its profile: %v", id, err)
			}
		}
	})
}

// TestSchemaDialectsMatch holds the two dialects of the profile tables to the same
// tables and columns, in the same order.
func TestSchemaDialectsMatch(t *testing.T) {
	tables := func(dialect string) map[string][]string {
		raw, err := os.ReadFile("../schema/" + dialect + "/0001_profiles.sql")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		var cur string
		for _, line := range strings.Split(string(raw), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "CREATE TABLE "):
				cur = strings.Fields(line)[2]
				out[cur] = []string{}
			case strings.HasPrefix(line, ")"):
				cur = ""
			case cur != "" && line != "" && !strings.HasPrefix(line, "--"):
				out[cur] = append(out[cur], strings.Fields(line)[0])
			}
		}
		return out
	}
	sqlite, postgres := tables("sqlite"), tables("postgres")
	if len(sqlite) != 2 || !reflect.DeepEqual(sqlite, postgres) {
		t.Errorf("sqlite tables %v\npostgres tables %v", sqlite, postgres)
	}
	// Every column the store reads is there.
	for table, cols := range map[string]string{"as2_local_profiles": localCols, "as2_remote_profiles": remoteCols} {
		var want []string
		for _, c := range strings.Split(cols, ",") {
			want = append(want, strings.TrimSpace(c))
		}
		if !reflect.DeepEqual(sqlite[table], want) {
			t.Errorf("%s columns %v\nstore reads %v", table, sqlite[table], want)
		}
	}
}

// TestProfileChangesAreAudited checks that creating, changing and deleting profiles
// writes audit events in the core's log with field-level changes.
func TestProfileChangesAreAudited(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		ctx := audit.WithActor(e.ctx, "user:alice")
		r := w.remote
		if _, err := e.store.CreateRemote(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.EndpointURL = "https://acme.example/as2-new"
		r.Retry.MaxRetries = ptr(9)
		if _, err := e.store.UpdateRemote(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := e.store.DeleteRemote(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		events, _, err := e.core.ListAudit(ctx, persistence.AuditFilter{Kind: AuditKindRemote})
		if err != nil {
			t.Fatal(err)
		}
		slices.Reverse(events) // oldest first
		if len(events) != 3 {
			t.Fatalf("%d events, want 3: %+v", len(events), events)
		}
		for i, want := range []struct{ action, change string }{
			{"create", `{"path":"as2_id","new":"ACME"}`},
			{"update", `{"path":"endpoint_url","old":"https://as2.acme.example/receive","new":"https://acme.example/as2-new"},` +
				`{"path":"retry.max_retries","new":9}]`},
			{"delete", `{"path":"as2_id","old":"ACME"}`},
		} {
			ev := events[i]
			got := string(audit.ChangesJSON(ev.Changes))
			if ev.Action != want.action || ev.Actor != "user:alice" || ev.RecordID != "acme" || !strings.Contains(got, want.change) {
				t.Errorf("event %d = %s %s by %s: %s\nwant %s containing %s", i, ev.Action, ev.RecordID, ev.Actor, got, want.action, want.change)
			}
		}
		if _, problems, err := e.core.VerifyAudit(ctx); err != nil || len(problems) > 0 {
			t.Errorf("VerifyAudit: %v %v", problems, err)
		}
	})
}
