package profile

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/secret"
)

// RSA keys are slow to make, so the tests share two; a certificate gets a fresh serial
// and its own validity, so each is distinct.
var (
	keysOnce         sync.Once
	ourKey, theirKey *rsa.PrivateKey
)

func rsaKeys(t *testing.T) (ours, theirs *rsa.PrivateKey) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if ourKey, err = rsa.GenerateKey(rand.Reader, 2048); err == nil {
			theirKey, err = rsa.GenerateKey(rand.Reader, 2048)
		}
		if err != nil {
			panic(err)
		}
	})
	return ourKey, theirKey
}

// countingSQL counts transactions and can make writes fail, to see what the store does
// around them.
type countingSQL struct {
	module.SQL
	reads     atomic.Int64
	failWrite atomic.Bool
}

var errWriteRefused = errors.New("write refused by the test")

func (c *countingSQL) Read(ctx context.Context, fn func(module.Tx) error) error {
	c.reads.Add(1)
	return c.SQL.Read(ctx, fn)
}

func (c *countingSQL) Write(ctx context.Context, fn func(module.Tx) error) error {
	if c.failWrite.Load() {
		return errWriteRefused
	}
	return c.SQL.Write(ctx, fn)
}

// env is one test's gateway: a real database with the module's tables, sealed
// certificates and the profile store and directory over them.
type env struct {
	t     *testing.T
	ctx   context.Context
	core  *db.Store
	sql   *countingSQL
	store *Store
	dir   *Dir
	ca    certstest.Pair
	box   *secret.Box
}

// schema applies every file of the module's schema directory, including the tables of
// the module's other parts.
func schema() []db.ModuleSchema {
	return []db.ModuleSchema{{Name: "as2", FS: os.DirFS("../schema")}}
}

// forEachDB runs fn against every available database with a fresh env.
func forEachDB(t *testing.T, fn func(t *testing.T, e *env)) {
	dbtest.ForEachModules(t, schema(), func(t *testing.T, s *db.Store) {
		t.Parallel()
		fn(t, newEnv(t, s))
	})
}

func newEnv(t *testing.T, s *db.Store) *env {
	t.Helper()
	k, err := secret.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.New(k)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), core: s, sql: &countingSQL{SQL: s.ModuleSQL()}, box: box}
	e.store = NewStore(e.sql, s)
	e.dir = NewDirectory(e.store, certs.NewOpener(s, box), s)
	e.ca = certstest.CA(t, "Test CA")
	return e
}

func (e *env) party(kind persistence.PartyKind, name string) {
	e.t.Helper()
	if _, err := e.core.CreateParty(e.ctx, persistence.Party{Kind: kind, Name: persistence.PartyName(name)}); err != nil {
		e.t.Fatalf("create %s %s: %v", kind, name, err)
	}
}

// cert stores a certificate for key valid from notBefore to notAfter, with its private
// key when withKey, and returns its id and the parsed certificate.
func (e *env) cert(name string, key crypto.Signer, notBefore, notAfter time.Time, withKey bool) (int64, *x509.Certificate) {
	e.t.Helper()
	leaf := certstest.Leaf(e.t, e.ca, name, key, notBefore, notAfter)
	p := certs.Parsed{Cert: leaf.Cert}
	if withKey {
		p.Key = leaf.Key
	}
	recs, err := certs.Records([]certs.Parsed{p}, name, e.box)
	if err != nil {
		e.t.Fatal(err)
	}
	stored, err := e.core.CreateCertificates(e.ctx, recs)
	if err != nil {
		e.t.Fatal(err)
	}
	return stored[0].ID, leaf.Cert
}

// storeCA stores a certificate without its key.
func (e *env) storeCA(p certstest.Pair) int64 {
	e.t.Helper()
	return e.storePair(p, false)
}

// validCert stores a certificate valid from a day ago for a year.
func (e *env) validCert(name string, key crypto.Signer, withKey bool) int64 {
	e.t.Helper()
	id, _ := e.cert(name, key, time.Now().Add(-24*time.Hour), time.Now().Add(365*24*time.Hour), withKey)
	return id
}

// world is a typical set-up: organization "local" with a signing and decryption key, and
// partner "acme" with one certificate.
type world struct {
	ourCert, theirCert int64
	local              Local
	remote             Remote
}

func (e *env) world() world {
	e.t.Helper()
	ours, theirs := rsaKeys(e.t)
	e.party(persistence.PartyOrganization, "local")
	e.party(persistence.PartyPartner, "acme")
	w := world{ourCert: e.validCert("wharf", ours, true), theirCert: e.validCert("acme", theirs, false)}
	w.local = NewLocal()
	w.local.Organization = "local"
	w.local.AS2ID = "WHARF"
	w.local.SigningCertificateID = w.ourCert
	w.local.DecryptionCertificateID = w.ourCert
	w.remote = NewRemote()
	w.remote.Partner = "acme"
	w.remote.AS2ID = "ACME"
	w.remote.EndpointURL = "https://as2.acme.example/receive"
	w.remote.PartnerCertificateIDs = []int64{w.theirCert}
	return w
}

func (e *env) mustCreate(w world) (Local, Remote) {
	e.t.Helper()
	l, err := e.store.CreateLocal(e.ctx, w.local)
	if err != nil {
		e.t.Fatalf("create local: %v", err)
	}
	r, err := e.store.CreateRemote(e.ctx, w.remote)
	if err != nil {
		e.t.Fatalf("create remote: %v", err)
	}
	return l, r
}

// uses lists the records that use a certificate as kind:name.
func (e *env) uses(id int64) []string {
	e.t.Helper()
	us, err := e.core.ListCertificateUses(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	out := []string{}
	for _, u := range us {
		out = append(out, u.Kind+":"+u.Name)
	}
	return out
}

// fieldOf returns the field a FieldError in err names, or "".
func fieldOf(err error) string {
	var fe *persistence.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

func ptr[T any](v T) *T { return &v }
