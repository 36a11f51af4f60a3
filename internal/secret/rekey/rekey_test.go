package rekey_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/secret"
	"wharf/internal/secret/rekey"
	"wharf/internal/secret/secrettest"
)

// fixture is a database with a value sealed in every column that holds one, all under
// the one key of a key file.
type fixture struct {
	store   *db.Store
	keyPath string
	oldID   string
	plain   map[string]string // what each sealed value holds, by name
}

func newFixture(t *testing.T, s *db.Store) fixture {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "secrets.key")
	k := secrettest.WriteNewKey(t, path)
	box, err := secret.New(k)
	if err != nil {
		t.Fatal(err)
	}
	seal := func(v string) []byte {
		b, err := box.Seal([]byte(v))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	f := fixture{store: s, keyPath: path, oldID: k.ID, plain: map[string]string{
		"plugin": `{"headers":{"Authorization":"Bearer plugin-canary"}}`,
		"totp":   "totp-canary",
		"idp":    "idp-canary",
	}}
	if err := secret.Verify(ctx, s, box, path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: "poster", Type: persistence.PluginHTTPPoster,
		Enabled: true, Config: []byte(`{}`), Secrets: seal(f.plain["plugin"])}); err != nil {
		t.Fatal(err)
	}
	u, err := s.CreateUser(ctx, persistence.User{Name: "alice", Role: persistence.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetUserTOTP(ctx, u.ID, seal(f.plain["totp"])); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateIdentityProvider(ctx, persistence.IdentityProvider{Name: "corp", IssuerURL: "https://id.example.com",
		ClientID: "wharf", SealedSecret: seal(f.plain["idp"]), Enabled: true}); err != nil {
		t.Fatal(err)
	}
	ca := certstest.CA(t, "Test CA")
	key := certstest.ECKey(t)
	recs, err := certs.Records([]certs.Parsed{{Cert: certstest.ValidLeaf(t, ca, "leaf", key).Cert, Key: key}, {Cert: ca.Cert}}, "test", box)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateCertificates(ctx, recs); err != nil {
		t.Fatal(err)
	}
	return f
}

// sealed lists every sealed value of the fixture's records, by name.
func (f fixture) sealed(t *testing.T) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	p, err := f.store.GetPluginConfig(ctx, "poster")
	if err != nil {
		t.Fatal(err)
	}
	out["plugin"] = p.Secrets
	u, err := f.store.GetUserByName(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	out["totp"] = u.SealedTOTP
	idp, err := f.store.GetIdentityProvider(ctx, "corp")
	if err != nil {
		t.Fatal(err)
	}
	out["idp"] = idp.SealedSecret
	cs, _, err := f.store.ListCertificates(ctx, persistence.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.HasPrivateKey {
			full, err := f.store.GetCertificate(ctx, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			out["certificate"] = full.SealedKey
		}
	}
	if len(out["certificate"]) == 0 {
		t.Fatal("no certificate with a sealed key")
	}
	return out
}

// keyFile opens the key file as a gateway would.
func (f fixture) keyFile(t *testing.T) ([]secret.Key, *secret.Box) {
	t.Helper()
	keys, err := secret.ReadKeys(f.keyPath)
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return keys, box
}

// requireReadable asserts that the key file opens every sealed value, the check value
// included, and that those with a known plain text still hold it.
func (f fixture) requireReadable(t *testing.T) {
	t.Helper()
	_, box := f.keyFile(t)
	if err := secret.Verify(context.Background(), f.store, box, f.keyPath); err != nil {
		t.Fatalf("the key file does not open the check value: %v", err)
	}
	for name, v := range f.sealed(t) {
		plain, err := box.Open(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want, ok := f.plain[name]; ok && string(plain) != want {
			t.Errorf("%s opens to %q, want %q", name, plain, want)
		}
	}
}

// requireAllUnder asserts that the key file holds only id and every value is under it.
func (f fixture) requireAllUnder(t *testing.T, id string) {
	t.Helper()
	keys, _ := f.keyFile(t)
	if len(keys) != 1 || keys[0].ID != id {
		t.Fatalf("key file holds %v, want only %s", keys, id)
	}
	for name, v := range f.sealed(t) {
		if got, _ := secret.SealedKeyID(v); got != id {
			t.Errorf("%s is under key %s, want %s", name, got, id)
		}
	}
	f.requireReadable(t)
}

func TestRekeyResealsEverything(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		f := newFixture(t, s)
		res, err := rekey.Run(context.Background(), s, f.keyPath)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Generated || res.KeyID == f.oldID || !slices.Equal(res.Dropped, []string{f.oldID}) {
			t.Errorf("result %+v, want a generated key and %s dropped", res, f.oldID)
		}
		// The check value, a plugin's secrets, a TOTP secret, a client secret, a key.
		if res.Resealed != 5 || res.Kept != 0 || res.Changed != 0 {
			t.Errorf("stats %+v, want 5 resealed", res.ResealStats)
		}
		f.requireAllUnder(t, res.KeyID)
	})
}

// interrupted fails the run's reseal after n values, as a kill would stop it.
type interrupted struct {
	*db.Store
	n int
}

var errKilled = errors.New("killed")

func (s *interrupted) ResealAll(ctx context.Context, reseal func([]byte) ([]byte, error)) (db.ResealStats, error) {
	return s.Store.ResealAll(ctx, func(v []byte) ([]byte, error) {
		if s.n == 0 {
			return nil, errKilled
		}
		s.n--
		return reseal(v)
	})
}

// A run stopped at any point leaves every value readable with the key file as it is
// then, and the next run completes it under the same new key instead of another one.
func TestRekeyInterruptedAndRunAgain(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		for _, after := range []int{0, 1, 3, 5} {
			f := newFixture(t, dbtest.Open(t, s.Dialect()))
			_, err := rekey.Run(context.Background(), &interrupted{Store: f.store, n: after}, f.keyPath)
			if !errors.Is(err, errKilled) {
				t.Fatalf("interrupted after %d: %v, want the interruption", after, err)
			}
			keys, _ := f.keyFile(t)
			if len(keys) != 2 || keys[1].ID != f.oldID {
				t.Fatalf("interrupted after %d: key file holds %v, want the new key and %s", after, keys, f.oldID)
			}
			f.requireReadable(t)
			res, err := rekey.Run(context.Background(), f.store, f.keyPath)
			if err != nil {
				t.Fatalf("run again after %d: %v", after, err)
			}
			if res.Generated || res.KeyID != keys[0].ID {
				t.Errorf("run again after %d: %+v, want the unfinished run's key %s completed", after, res, keys[0].ID)
			}
			f.requireAllUnder(t, keys[0].ID)
		}
	})
}

// A key file that does not open the database is refused before anything changes.
func TestRekeyRefusesWrongKeyFile(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		f := newFixture(t, s)
		before := f.sealed(t)
		wrong := filepath.Join(t.TempDir(), "wrong.key")
		other := secrettest.WriteNewKey(t, wrong)
		if _, err := rekey.Run(context.Background(), s, wrong); !errors.Is(err, secret.ErrWrongKey) {
			t.Fatalf("rekey with a wrong key file: %v, want ErrWrongKey", err)
		}
		keys, err := secret.ReadKeys(wrong)
		if err != nil || len(keys) != 1 || keys[0].ID != other.ID {
			t.Errorf("the wrong key file was changed: %v %v", keys, err)
		}
		for name, v := range f.sealed(t) {
			if string(v) != string(before[name]) {
				t.Errorf("%s changed", name)
			}
		}
	})
}
