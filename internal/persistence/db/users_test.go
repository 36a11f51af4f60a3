package db_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

const testPasswordHash = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"

var testSealedTOTP = []byte("sealed totp secret")

// newUser creates a user who has completed set-up.
func newUser(t testing.TB, s *db.Store, name persistence.UserName, role persistence.UserRole) persistence.User {
	t.Helper()
	return must1[persistence.User](t)(s.CreateUser(context.Background(), persistence.User{
		Name: name, Role: role, PasswordHash: testPasswordHash, SealedTOTP: testSealedTOTP,
		RecoveryHashes: []string{"r1", "r2"},
	}))
}

// newPendingUser creates a user who holds only a set-up link, valid until expires.
func newPendingUser(t testing.TB, s *db.Store, name persistence.UserName, role persistence.UserRole, token string, expires time.Time) persistence.User {
	t.Helper()
	return must1[persistence.User](t)(s.CreateUser(context.Background(), persistence.User{
		Name: name, Role: role, SetupTokenHash: hashOf(token), SetupExpiresAt: &expires,
	}))
}

func getUser(t testing.TB, s *db.Store, id int64) persistence.User {
	t.Helper()
	return must1[persistence.User](t)(s.GetUser(context.Background(), id))
}

func activeUsers(t testing.TB, s *db.Store) int {
	t.Helper()
	return must1[int](t)(s.CountActiveUsers(context.Background()))
}

func TestUsers(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		alice := must1[persistence.User](t)(s.CreateUser(ctx, persistence.User{
			Name: "alice.smith", DisplayName: "Alice Smith", Role: persistence.RoleAdmin,
			PasswordHash: testPasswordHash, SealedTOTP: testSealedTOTP, RecoveryHashes: []string{"a", "b"},
			OIDCIssuer: "https://id.example.com", OIDCSubject: "1234",
		}))
		if alice.ID == 0 || alice.Generation != 1 || alice.LastTOTPStep != 0 || alice.CreatedAt.IsZero() ||
			!alice.UpdatedAt.Equal(alice.CreatedAt) || alice.LastSignInAt != nil || alice.Disabled {
			t.Fatalf("CreateUser = %+v", alice)
		}
		bob := newPendingUser(t, s, "bob", persistence.RoleOperator, "bob-link", time.Now().Add(time.Hour))
		if bob.DisplayName != "bob" || bob.PasswordHash != "" || bob.SealedTOTP != nil || bob.RecoveryHashes != nil ||
			bob.SetupExpiresAt == nil || bob.OIDCIssuer != "" {
			t.Errorf("pending user = %+v", bob)
		}

		got := getUser(t, s, alice.ID)
		if got.Name != "alice.smith" || got.DisplayName != "Alice Smith" || got.Role != persistence.RoleAdmin ||
			got.PasswordHash != testPasswordHash || string(got.SealedTOTP) != string(testSealedTOTP) ||
			!slices.Equal(got.RecoveryHashes, []string{"a", "b"}) || got.OIDCIssuer != "https://id.example.com" ||
			got.OIDCSubject != "1234" || !got.CanSignIn(time.Now()) {
			t.Errorf("GetUser = %+v", got)
		}
		byName := must1[persistence.User](t)(s.GetUserByName(ctx, "bob"))
		if byName.ID != bob.ID || !byName.SetupPending(time.Now()) || byName.SetUp() {
			t.Errorf("GetUserByName = %+v", byName)
		}
		_, err := s.GetUser(ctx, 9999)
		wantErr(t, err, persistence.ErrNotFound)
		_, err = s.GetUserByName(ctx, "nobody")
		wantErr(t, err, persistence.ErrNotFound)

		list, total := mustUsers(t)(s.ListUsers(ctx, persistence.ListOptions{}))
		if total != 2 || len(list) != 2 || list[0].ID != alice.ID || list[1].ID != bob.ID {
			t.Errorf("ListUsers = %d %+v", total, list)
		}
		list, total = mustUsers(t)(s.ListUsers(ctx, persistence.ListOptions{Limit: 1, Offset: 1}))
		if total != 2 || len(list) != 1 || list[0].ID != bob.ID {
			t.Errorf("second page = %d %+v", total, list)
		}
		if n := activeUsers(t, s); n != 2 {
			t.Errorf("CountActiveUsers = %d, want 2", n)
		}

		_, err = s.CreateUser(ctx, persistence.User{Name: "bob", Role: persistence.RoleAdmin})
		wantErr(t, err, persistence.ErrConflict)
		_, err = s.CreateUser(ctx, persistence.User{Name: "carol", Role: persistence.RoleAdmin,
			OIDCIssuer: "https://id.example.com", OIDCSubject: "1234"})
		wantErr(t, err, persistence.ErrConflict)
		_, err = s.CreateUser(ctx, persistence.User{Name: "carol", Role: persistence.RoleAdmin,
			SetupTokenHash: hashOf("bob-link"), SetupExpiresAt: bob.SetupExpiresAt})
		wantErr(t, err, persistence.ErrConflict)

		for field, u := range map[string]persistence.User{
			"name":             {Name: "Carol", Role: persistence.RoleAdmin},
			"role":             {Name: "carol", Role: "root"},
			"display_name":     {Name: "carol", Role: persistence.RoleAdmin, DisplayName: "line\nbreak"},
			"password_hash":    {Name: "carol", Role: persistence.RoleAdmin, PasswordHash: "plain"},
			"recovery_hashes":  {Name: "carol", Role: persistence.RoleAdmin, RecoveryHashes: []string{""}},
			"setup_token_hash": {Name: "carol", Role: persistence.RoleAdmin, SetupTokenHash: "short"},
			"setup_expires_at": {Name: "carol", Role: persistence.RoleAdmin, SetupTokenHash: hashOf("x")},
			"oidc_subject":     {Name: "carol", Role: persistence.RoleAdmin, OIDCIssuer: "https://id.example.com"},
		} {
			_, err := s.CreateUser(ctx, u)
			wantField(t, err, field)
		}

		must(t, s.TouchUserSignIn(ctx, alice.ID, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
		if at := getUser(t, s, alice.ID).LastSignInAt; at == nil || !at.Equal(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) {
			t.Errorf("LastSignInAt = %v", at)
		}
		wantErr(t, s.TouchUserSignIn(ctx, 9999, time.Now()), persistence.ErrNotFound)

		must(t, s.DeleteUser(ctx, bob.ID))
		wantErr(t, s.DeleteUser(ctx, bob.ID), persistence.ErrNotFound)
	})
}

func TestUserSetupLinkWorksOnce(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		now := time.Now()
		bob := newPendingUser(t, s, "bob", persistence.RoleAdmin, "first-link", now.Add(time.Hour))

		// A new link replaces the old one.
		must(t, s.SetUserSetupToken(ctx, bob.ID, hashOf("second-link"), now.Add(time.Hour)))
		_, err := s.ConsumeUserSetupToken(ctx, hashOf("first-link"), now)
		wantErr(t, err, persistence.ErrNotFound)
		_, err = s.ConsumeUserSetupToken(ctx, hashOf("second-link"), now.Add(2*time.Hour))
		wantErr(t, err, persistence.ErrNotFound)

		got := must1[persistence.User](t)(s.ConsumeUserSetupToken(ctx, hashOf("second-link"), now))
		if got.ID != bob.ID || got.SetupTokenHash != "" || got.SetupExpiresAt != nil {
			t.Errorf("ConsumeUserSetupToken = %+v", got)
		}
		_, err = s.ConsumeUserSetupToken(ctx, hashOf("second-link"), now)
		wantErr(t, err, persistence.ErrNotFound)
		_, err = s.ConsumeUserSetupToken(ctx, "", now)
		wantField(t, err, "setup_token_hash")

		done := must1[persistence.User](t)(s.CompleteUserSetup(ctx, bob.ID, testPasswordHash, testSealedTOTP, []string{"r1", "r2", "r3"}))
		if !done.SetUp() || done.Generation != bob.Generation+1 || !slices.Equal(done.RecoveryHashes, []string{"r1", "r2", "r3"}) {
			t.Errorf("CompleteUserSetup = %+v", done)
		}
		_, err = s.CompleteUserSetup(ctx, bob.ID, "", testSealedTOTP, nil)
		wantField(t, err, "password_hash")
		_, err = s.CompleteUserSetup(ctx, bob.ID, testPasswordHash, nil, nil)
		wantField(t, err, "totp_secret")
		_, err = s.CompleteUserSetup(ctx, 9999, testPasswordHash, testSealedTOTP, nil)
		wantErr(t, err, persistence.ErrNotFound)

		// A disabled user's link does not work.
		newUser(t, s, "alice", persistence.RoleAdmin)
		must(t, s.SetUserSetupToken(ctx, bob.ID, hashOf("third-link"), now.Add(time.Hour)))
		must(t, s.SetUserDisabled(ctx, bob.ID, true))
		_, err = s.ConsumeUserSetupToken(ctx, hashOf("third-link"), now)
		wantErr(t, err, persistence.ErrNotFound)

		wantErr(t, s.SetUserSetupToken(ctx, 9999, hashOf("x"), now.Add(time.Hour)), persistence.ErrNotFound)
		wantField(t, s.SetUserSetupToken(ctx, bob.ID, "not-a-hash", now.Add(time.Hour)), "setup_token_hash")
		wantField(t, s.SetUserSetupToken(ctx, bob.ID, hashOf("x"), time.Time{}), "setup_expires_at")
	})
}

func TestTOTPStepIsAcceptedOnce(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		u := newUser(t, s, "alice", persistence.RoleAdmin)
		must(t, s.AcceptTOTPStep(ctx, u.ID, 1000))
		wantErr(t, s.AcceptTOTPStep(ctx, u.ID, 1000), persistence.ErrConflict)
		wantErr(t, s.AcceptTOTPStep(ctx, u.ID, 999), persistence.ErrConflict)
		must(t, s.AcceptTOTPStep(ctx, u.ID, 1001))
		if got := getUser(t, s, u.ID); got.LastTOTPStep != 1001 || !got.UpdatedAt.Equal(u.UpdatedAt) {
			t.Errorf("after accepting: step %d, updated %v (was %v)", got.LastTOTPStep, got.UpdatedAt, u.UpdatedAt)
		}
		wantErr(t, s.AcceptTOTPStep(ctx, 9999, 5000), persistence.ErrNotFound)

		// Two sign-ins presenting the same code together: exactly one gets it.
		for step := int64(2000); step < 2010; step++ {
			var wg sync.WaitGroup
			errs := make([]error, 2)
			start := make(chan struct{})
			for i := range errs {
				wg.Go(func() {
					<-start
					errs[i] = s.AcceptTOTPStep(ctx, u.ID, step)
				})
			}
			close(start)
			wg.Wait()
			wins := 0
			for _, err := range errs {
				switch {
				case err == nil:
					wins++
				case !isConflict(err):
					t.Fatalf("step %d: %v", step, err)
				}
			}
			if wins != 1 {
				t.Fatalf("step %d accepted %d times", step, wins)
			}
		}
	})
}

func TestRecoveryCodeIsUsedOnce(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		u := newUser(t, s, "alice", persistence.RoleAdmin)
		u = must1[persistence.User](t)(s.SetUserRecoveryCodes(ctx, u.ID, []string{"a", "b", "c", "d"}))
		must(t, s.UseRecoveryCode(ctx, u.ID, 1, "b"))
		wantErr(t, s.UseRecoveryCode(ctx, u.ID, 1, "b"), persistence.ErrConflict)
		wantErr(t, s.UseRecoveryCode(ctx, u.ID, 7, "a"), persistence.ErrConflict)
		wantErr(t, s.UseRecoveryCode(ctx, u.ID, -1, "a"), persistence.ErrConflict)
		must(t, s.UseRecoveryCode(ctx, u.ID, 0, "a"))
		if got := getUser(t, s, u.ID).RecoveryHashes; !slices.Equal(got, []string{"c", "d"}) {
			t.Errorf("codes left = %v, want [c d]", got)
		}
		wantErr(t, s.UseRecoveryCode(ctx, 9999, 0, "c"), persistence.ErrNotFound)

		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i := range errs {
			wg.Go(func() {
				<-start
				errs[i] = s.UseRecoveryCode(ctx, u.ID, 0, "c")
			})
		}
		close(start)
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) || !isConflict(errs[0]) && !isConflict(errs[1]) {
			t.Fatalf("concurrent uses of one code: %v, %v", errs[0], errs[1])
		}
		must(t, s.UseRecoveryCode(ctx, u.ID, 0, "d"))
		if got := getUser(t, s, u.ID).RecoveryHashes; got != nil {
			t.Errorf("codes left = %v, want none", got)
		}
	})
}

func TestLastUserIsProtected(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		now := time.Now()
		alice := newUser(t, s, "alice", persistence.RoleAdmin)
		wantErr(t, s.SetUserDisabled(ctx, alice.ID, true), persistence.ErrLastUser)
		wantErr(t, s.DeleteUser(ctx, alice.ID), persistence.ErrLastUser)
		_, err := s.SetUserRole(ctx, alice.ID, persistence.RoleOperator)
		wantErr(t, err, persistence.ErrLastUser)

		// An operator can sign in, but alice is still the last administrator.
		bob := newUser(t, s, "bob", persistence.RoleOperator)
		err = s.SetUserDisabled(ctx, alice.ID, true)
		wantErr(t, err, persistence.ErrLastUser)
		if !strings.Contains(err.Error(), `"alice"`) {
			t.Errorf("error %q does not name the user", err)
		}
		wantErr(t, s.DeleteUser(ctx, alice.ID), persistence.ErrLastUser)
		_, err = s.SetUserRole(ctx, alice.ID, persistence.RoleOperator)
		wantErr(t, err, persistence.ErrLastUser)
		// An administrator whose link expired cannot sign in and does not count.
		newPendingUser(t, s, "dave", persistence.RoleAdmin, "dave-link", now.Add(-time.Minute))
		wantErr(t, s.DeleteUser(ctx, alice.ID), persistence.ErrLastUser)
		if n := activeUsers(t, s); n != 2 {
			t.Errorf("CountActiveUsers = %d, want 2", n)
		}

		// An administrator with a valid set-up link can sign in.
		carol := newPendingUser(t, s, "carol", persistence.RoleAdmin, "carol-link", now.Add(time.Hour))
		must(t, s.SetUserDisabled(ctx, alice.ID, true))
		must(t, s.SetUserDisabled(ctx, alice.ID, true))
		if n := activeUsers(t, s); n != 2 {
			t.Errorf("CountActiveUsers = %d, want 2 (bob, carol)", n)
		}
		wantErr(t, s.SetUserDisabled(ctx, carol.ID, true), persistence.ErrLastUser)
		must(t, s.DeleteUser(ctx, alice.ID))
		must(t, s.SetUserDisabled(ctx, bob.ID, true))
		wantErr(t, s.DeleteUser(ctx, carol.ID), persistence.ErrLastUser)
		_, err = s.SetUserRole(ctx, carol.ID, persistence.RoleOperator)
		wantErr(t, err, persistence.ErrLastUser)

		// Enabling and promoting bob make carol's changes possible.
		must(t, s.SetUserDisabled(ctx, bob.ID, false))
		bob = must1[persistence.User](t)(s.SetUserRole(ctx, bob.ID, persistence.RoleAdmin))
		if bob.Role != persistence.RoleAdmin {
			t.Errorf("role = %s, want admin", bob.Role)
		}
		must1[persistence.User](t)(s.SetUserRole(ctx, carol.ID, persistence.RoleOperator))
		must(t, s.DeleteUser(ctx, carol.ID))
		wantErr(t, s.DeleteUser(ctx, bob.ID), persistence.ErrLastUser)
		_, err = s.SetUserRole(ctx, bob.ID, "root")
		wantField(t, err, "role")
		wantErr(t, s.SetUserDisabled(ctx, 9999, true), persistence.ErrNotFound)
		wantErr(t, s.SetUserDisabled(ctx, 9999, false), persistence.ErrNotFound)
	})
}

func TestConcurrentDisablesKeepOneUser(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		a := newUser(t, s, "alice", persistence.RoleAdmin)
		b := newUser(t, s, "bob", persistence.RoleAdmin)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, id := range []int64{a.ID, b.ID} {
			wg.Go(func() {
				<-start
				errs[i] = s.SetUserDisabled(ctx, id, true)
			})
		}
		close(start)
		wg.Wait()
		if n := activeUsers(t, s); n != 1 {
			t.Fatalf("%d users can sign in after concurrent disables (%v, %v), want 1", n, errs[0], errs[1])
		}
	})
}

func TestUserGeneration(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		newUser(t, s, "admin", persistence.RoleAdmin)
		u := newUser(t, s, "alice", persistence.RoleOperator)
		gen := func() int64 { return getUser(t, s, u.ID).Generation }
		steps := []struct {
			what string
			do   func() error
			want int64
		}{
			{"password", func() error { _, err := s.SetUserPassword(ctx, u.ID, testPasswordHash+"x"); return err }, 2},
			{"TOTP", func() error { _, err := s.SetUserTOTP(ctx, u.ID, []byte("new secret")); return err }, 3},
			{"recovery codes", func() error { _, err := s.SetUserRecoveryCodes(ctx, u.ID, []string{"x"}); return err }, 3},
			{"role", func() error { _, err := s.SetUserRole(ctx, u.ID, persistence.RoleAdmin); return err }, 3},
			{"bump", func() error { return s.BumpUserGeneration(ctx, u.ID) }, 4},
			{"disable", func() error { return s.SetUserDisabled(ctx, u.ID, true) }, 5},
			{"disable again", func() error { return s.SetUserDisabled(ctx, u.ID, true) }, 5},
			{"enable", func() error { return s.SetUserDisabled(ctx, u.ID, false) }, 5},
			{"sign-in", func() error { return s.TouchUserSignIn(ctx, u.ID, time.Now()) }, 5},
			{"set-up", func() error {
				_, err := s.CompleteUserSetup(ctx, u.ID, testPasswordHash, testSealedTOTP, nil)
				return err
			}, 6},
		}
		for _, st := range steps {
			must(t, st.do())
			if g := gen(); g != st.want {
				t.Errorf("after %s: generation %d, want %d", st.what, g, st.want)
			}
		}
		got := getUser(t, s, u.ID)
		if got.PasswordHash != testPasswordHash || string(got.SealedTOTP) != string(testSealedTOTP) || got.RecoveryHashes != nil {
			t.Errorf("after set-up: %+v", got)
		}
		wantErr(t, s.BumpUserGeneration(ctx, 9999), persistence.ErrNotFound)
		_, err := s.SetUserPassword(ctx, 9999, testPasswordHash)
		wantErr(t, err, persistence.ErrNotFound)
		_, err = s.SetUserPassword(ctx, u.ID, "")
		wantField(t, err, "password_hash")
		_, err = s.SetUserTOTP(ctx, u.ID, nil)
		wantField(t, err, "totp_secret")
		_, err = s.SetUserRecoveryCodes(ctx, u.ID, make([]string, 65))
		wantField(t, err, "recovery_hashes")
	})
}

func TestParseUserName(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"alice", true},
		{"alice.smith-2_x", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"Alice", false},
		{"alice smith", false},
		{"alice@example.com", false},
		{"ålice", false},
	} {
		if _, err := persistence.ParseUserName(tt.in); (err == nil) != tt.ok {
			t.Errorf("ParseUserName(%q) error = %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
	var r persistence.UserRole
	if err := json.Unmarshal([]byte(`"root"`), &r); err == nil {
		t.Error("JSON decoding accepted an unknown role")
	}
	if err := r.Scan("operator"); err != nil || r != persistence.RoleOperator {
		t.Errorf("Scan(operator) = %v, %v", r, err)
	}
}

// TestInvalidStoredUsersAreRefused corrupts rows behind the store's back: reading them
// fails instead of returning a user the domain refuses.
func TestInvalidStoredUsersAreRefused(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		for col, bad := range map[string]string{"name": "Not Valid", "role": "root", "recovery_hashes": "not json"} {
			u := newUser(t, s, persistence.UserName("user-"+strings.ReplaceAll(col, "_", "-")), persistence.RoleAdmin)
			must(t, db.ExecRaw(ctx, s, `UPDATE users SET `+col+` = ? WHERE id = ?`, bad, u.ID))
			_, err := s.GetUser(ctx, u.ID)
			if err == nil || isNotFound(err) {
				t.Errorf("GetUser with %s %q: error = %v, want a read error", col, bad, err)
			}
			if _, _, err := s.ListUsers(ctx, persistence.ListOptions{}); err == nil {
				t.Errorf("ListUsers with %s %q succeeded", col, bad)
			}
			must(t, db.ExecRaw(ctx, s, `DELETE FROM users WHERE id = ?`, u.ID))
		}
		_, err := s.CreateUser(ctx, persistence.User{Name: "../admin", Role: persistence.RoleAdmin})
		wantField(t, err, "name")
	})
}

func TestUserJSONHasNoSecrets(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		expires := time.Now().Add(time.Hour)
		u := must1[persistence.User](t)(s.CreateUser(ctx, persistence.User{
			Name: "alice", Role: persistence.RoleAdmin, PasswordHash: testPasswordHash, SealedTOTP: testSealedTOTP,
			RecoveryHashes: []string{"recovery-hash-1"}, SetupTokenHash: hashOf("link"), SetupExpiresAt: &expires,
		}))
		b, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		must(t, json.Unmarshal(b, &fields))
		want := []string{"created_at", "disabled", "display_name", "id", "last_sign_in_at", "name", "role",
			"setup_expires_at", "updated_at"}
		got := make([]string, 0, len(fields))
		for k := range fields {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("JSON fields = %v, want %v", got, want)
		}
		for _, secret := range []string{testPasswordHash, base64.StdEncoding.EncodeToString(testSealedTOTP),
			string(testSealedTOTP), "recovery-hash-1", hashOf("link")} {
			if strings.Contains(string(b), secret) {
				t.Errorf("JSON %s holds %q", b, secret)
			}
		}
	})
}

func isConflict(err error) bool { return errors.Is(err, persistence.ErrConflict) }

func isNotFound(err error) bool { return errors.Is(err, persistence.ErrNotFound) }

// mustUsers checks the error of a user list: mustUsers(t)(f()).
func mustUsers(t testing.TB) func([]persistence.User, int, error) ([]persistence.User, int) {
	return func(v []persistence.User, n int, err error) ([]persistence.User, int) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v, n
	}
}

func TestCompleteUserSetupWithToken(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		now := time.Now()
		bob := newPendingUser(t, s, "bob", persistence.RoleAdmin, "bob-link", now.Add(time.Hour))
		carol := newPendingUser(t, s, "carol", persistence.RoleOperator, "carol-link", now.Add(time.Hour))

		// Looking the link up leaves it usable.
		for range 2 {
			if u := must1[persistence.User](t)(s.FindUserBySetupToken(ctx, hashOf("bob-link"), now)); u.ID != bob.ID {
				t.Fatalf("FindUserBySetupToken = user %d, want %d", u.ID, bob.ID)
			}
		}
		_, err := s.FindUserBySetupToken(ctx, hashOf("bob-link"), now.Add(2*time.Hour))
		wantErr(t, err, persistence.ErrNotFound)

		// Another user's link, an expired link and a bad input complete nothing.
		_, err = s.CompleteUserSetupWithToken(ctx, bob.ID, hashOf("carol-link"), now, testPasswordHash, testSealedTOTP, nil)
		wantErr(t, err, persistence.ErrNotFound)
		_, err = s.CompleteUserSetupWithToken(ctx, bob.ID, hashOf("bob-link"), now.Add(2*time.Hour), testPasswordHash, testSealedTOTP, nil)
		wantErr(t, err, persistence.ErrNotFound)
		_, err = s.CompleteUserSetupWithToken(ctx, bob.ID, hashOf("bob-link"), now, "", testSealedTOTP, nil)
		wantField(t, err, "password_hash")

		got := must1[persistence.User](t)(s.CompleteUserSetupWithToken(ctx, bob.ID, hashOf("bob-link"), now, testPasswordHash, testSealedTOTP, nil))
		if got.PasswordHash != testPasswordHash || got.SetupTokenHash != "" || got.Generation != bob.Generation+1 {
			t.Fatalf("completed user = %+v", got)
		}
		// The link works once.
		_, err = s.CompleteUserSetupWithToken(ctx, bob.ID, hashOf("bob-link"), now, testPasswordHash, testSealedTOTP, nil)
		wantErr(t, err, persistence.ErrNotFound)
		_, err = s.FindUserBySetupToken(ctx, hashOf("bob-link"), now)
		wantErr(t, err, persistence.ErrNotFound)
		// Carol's link was not touched.
		if u := must1[persistence.User](t)(s.FindUserBySetupToken(ctx, hashOf("carol-link"), now)); u.ID != carol.ID {
			t.Fatalf("carol's link finds user %d", u.ID)
		}
	})
}
