package session

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// TestSignOutEndsCopiedCookie replays a cookie copied before sign-out: it must open
// nothing, neither a page nor a change with the session's CSRF token, while the same
// user's session in another browser goes on.
func TestSignOutEndsCopiedCookie(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		b := setup(t, s)
		other := newClient(t)
		b.signIn(t, b.alice)
		page := b.do(t, http.MethodGet, "/ui/app/", nil, "")
		wantSignedIn(t, page, b.alice)
		token := strings.TrimPrefix(page.body, fmt.Sprintf("user=%d csrf=", b.alice.ID))
		copied := b.sessionCookie(t).Value

		// The same user signed in in a second browser.
		first := b.client
		b.client = other
		b.signIn(t, b.alice)
		b.client = first

		if r := b.do(t, http.MethodPost, "/ui/sign-out", nil, ""); r.status != http.StatusOK {
			t.Fatalf("sign out = %d", r.status)
		}
		b.setSessionCookie(t, copied)
		wantSignInRedirect(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""))
		form := url.Values{"name": {"replayed"}, CSRFField: {token}}
		r := b.do(t, http.MethodPost, "/ui/app/", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, form.Encode())
		if r.status != http.StatusUnauthorized || strings.Contains(r.body, "changed by") {
			t.Errorf("change with the replayed cookie and its CSRF token = %d %q; want 401 and no change", r.status, r.body)
		}

		b.client = other
		wantSignedIn(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""), b.alice)
	})
}

// TestSessionRecords checks the server-side records: one per sign-in, gone after
// sign-out everywhere, with the user, and once expired.
func TestSessionRecords(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		alice, bob := newUser(t, s, "alice"), newUser(t, s, "bob")
		now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		m, err := NewManager(Config{Key: GenerateKey(), IdleTimeout: testIdle, AbsoluteTimeout: testAbsolute,
			Store: s, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		issue := func(u persistence.User) *Session {
			t.Helper()
			sess, err := m.Issue(httptest.NewRecorder(), signInRequest(), u)
			if err != nil {
				t.Fatal(err)
			}
			return sess
		}
		recorded := func(sess *Session) bool {
			t.Helper()
			u, err := s.GetUISessionUser(ctx, hashID(sess.id))
			if errors.Is(err, persistence.ErrNotFound) {
				return false
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.ID != sess.UserID {
				t.Errorf("session of user %d records user %d", sess.UserID, u.ID)
			}
			return true
		}
		a1, a2, b1 := issue(alice), issue(alice), issue(bob)
		if a1.id == a2.id || !recorded(a1) || !recorded(a2) || !recorded(b1) {
			t.Fatal("each sign-in is not its own record")
		}
		if err := m.End(ctx, httptest.NewRecorder(), a1); err != nil {
			t.Fatal(err)
		}
		if err := m.End(ctx, httptest.NewRecorder(), a1); err != nil {
			t.Errorf("signing out twice: %v", err)
		}
		if recorded(a1) || !recorded(a2) {
			t.Error("End did not delete exactly its own record")
		}
		if err := s.BumpUserGeneration(ctx, alice.ID); err != nil {
			t.Fatal(err)
		}
		if recorded(a2) || !recorded(b1) {
			t.Error("sign out everywhere did not delete exactly the user's records")
		}
		if err := s.DeleteUser(ctx, bob.ID); err != nil {
			t.Fatal(err)
		}
		if recorded(b1) {
			t.Error("a deleted user's session is still recorded")
		}

		// A sign-in after a session's absolute lifetime prunes it.
		alice, err = s.GetUser(ctx, alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		old := issue(alice)
		now = now.Add(testAbsolute - time.Second)
		young := issue(alice)
		if !recorded(old) {
			t.Fatal("a session still in its lifetime was pruned")
		}
		now = now.Add(time.Second)
		issue(alice)
		if recorded(old) || !recorded(young) {
			t.Error("sign-in did not prune exactly the expired session")
		}
	})
}

func TestSecureCookieName(t *testing.T) {
	s := dbtest.SQLite(t)
	u := newUser(t, s, "alice")
	for _, secure := range []bool{false, true} {
		m, err := NewManager(Config{Key: GenerateKey(), Secure: secure, IdleTimeout: testIdle,
			AbsoluteTimeout: testAbsolute, Store: s})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		sess, err := m.Issue(rec, signInRequest(), u)
		if err != nil {
			t.Fatal(err)
		}
		c := rec.Result().Cookies()[0]
		want, path := DefaultCookieName, "/ui"
		if secure {
			want, path = SecureCookieName, "/"
		}
		if c.Name != want || c.Path != path || c.Secure != secure || c.Domain != "" {
			t.Errorf("secure=%v: cookie %s path %s secure %v domain %q; want %s path %s", secure, c.Name, c.Path, c.Secure, c.Domain, want, path)
		}
		req := httptest.NewRequest(http.MethodGet, "/ui/", nil)
		req.AddCookie(c)
		if got, err := m.Load(req); err != nil || got.UserID != u.ID {
			t.Errorf("secure=%v: Load = %v, %v", secure, got, err)
		}
		end := httptest.NewRecorder()
		if err := m.End(context.Background(), end, sess); err != nil {
			t.Fatal(err)
		}
		if c := end.Result().Cookies()[0]; c.Name != want || c.Path != path || c.MaxAge >= 0 {
			t.Errorf("secure=%v: End's cookie %+v does not expire the session cookie", secure, c)
		}
	}
}

// signInRequest is a sign-in request from a browser without a session cookie.
func signInRequest() *http.Request {
	return httptest.NewRequest(http.MethodPost, "/ui/sign-in", nil)
}

// TestSignInEndsTheReplacedSession signs another user in in a browser that has a
// session: a copy of the replaced cookie opens nothing afterwards.
func TestSignInEndsTheReplacedSession(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		b := setup(t, s)
		b.signIn(t, b.alice)
		replaced := b.sessionCookie(t).Value
		b.signIn(t, b.bob)
		wantSignedIn(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""), b.bob)
		b.setSessionCookie(t, replaced)
		wantSignInRedirect(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""))
	})
}
