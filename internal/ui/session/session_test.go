package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

const (
	testIdle     = 30 * time.Minute
	testAbsolute = 12 * time.Hour
	testBodyMax  = 1 << 10
)

const testPasswordHash = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"

// clock is the managers' time, moved by tests instead of sleeping.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// sessionUserFunc lets a test change what the store answers for a session's user
// without changing the store.
type sessionUserFunc func(ctx context.Context, idHash string) (persistence.User, error)

// swappable is the manager's store: b.store, with the user lookup replaceable.
type swappable struct {
	*db.Store
	b *bundle
}

func (s swappable) GetUISessionUser(ctx context.Context, idHash string) (persistence.User, error) {
	s.b.usersMu.Lock()
	f := s.b.users
	s.b.usersMu.Unlock()
	if f != nil {
		return f(ctx, idHash)
	}
	return s.Store.GetUISessionUser(ctx, idHash)
}

// bundle is one test's gateway slice: a store with two administrators, a manager on an
// injected clock, and a server mounting the middleware as the UI does.
type bundle struct {
	store      *db.Store
	clock      *clock
	mgr        *Manager
	srv        *httptest.Server
	alice, bob persistence.User
	client     *http.Client
	users      sessionUserFunc // what the manager asks for a session's user; the store when nil
	usersMu    sync.Mutex
}

func setup(t *testing.T, s *db.Store) *bundle {
	t.Helper()
	b := &bundle{store: s, clock: &clock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}}
	b.alice = newUser(t, s, "alice")
	b.bob = newUser(t, s, "bob") // so alice is not the last user and can be disabled
	mgr, err := NewManager(Config{
		Key: GenerateKey(), IdleTimeout: testIdle, AbsoluteTimeout: testAbsolute,
		Store:  swappable{Store: s, b: b},
		Now:    b.clock.Now,
		Logger: slog.New(slog.NewTextHandler(tLogWriter{t}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	b.mgr = mgr
	b.srv = httptest.NewServer(b.handler(t))
	t.Cleanup(b.srv.Close)
	b.client = newClient(t)
	return b
}

// handler mounts a sign-in page, a test-only sign-in action and a protected page that
// echoes its session, composed by hand as the UI composes its middleware.
func (b *bundle) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ui/sign-in", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "sign in")
	})
	mux.HandleFunc("POST /ui/test-sign-in/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		u, err := b.store.GetUser(r.Context(), id)
		if err != nil {
			t.Errorf("sign in: %v", err)
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		if _, err := b.mgr.Issue(w, r, u); err != nil {
			t.Errorf("Issue: %v", err)
		}
	})
	mux.Handle("POST /ui/sign-out", b.mgr.Require(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := FromContext(r.Context())
		if err := b.mgr.End(r.Context(), w, s); err != nil {
			t.Errorf("End: %v", err)
		}
	})))
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := FromContext(r.Context())
		if !ok {
			t.Error("protected handler ran without a session")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := r.ParseForm(); err != nil {
				t.Errorf("handler ParseForm after CSRF: %v", err)
			}
			fmt.Fprintf(w, "changed by %d: %s", s.UserID, r.PostForm.Get("name"))
			return
		}
		fmt.Fprintf(w, "user=%d csrf=%s", s.UserID, s.CSRFToken)
	})
	mux.Handle("/ui/app/", b.mgr.Require(CSRF(page)))
	mux.Handle("GET /ui/live/", b.mgr.RequireWithoutRenewal(page))
	return SecurityHeaders(LimitBody(testBodyMax)(mux))
}

func (b *bundle) setUsers(u sessionUserFunc) {
	b.usersMu.Lock()
	defer b.usersMu.Unlock()
	b.users = u
}

func newUser(t testing.TB, s *db.Store, name persistence.UserName) persistence.User {
	t.Helper()
	u, err := s.CreateUser(context.Background(), persistence.User{
		Name: name, Role: persistence.RoleAdmin, PasswordHash: testPasswordHash,
		SealedTOTP: []byte("sealed totp secret"), RecoveryHashes: []string{"r1"},
	})
	if err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	return u
}

// newClient keeps cookies and stops at redirects so tests see them.
func newClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (b *bundle) do(t *testing.T, method, path string, header http.Header, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{resp.StatusCode, resp.Header, string(data)}
}

func (b *bundle) signIn(t *testing.T, u persistence.User) {
	t.Helper()
	if r := b.do(t, http.MethodPost, fmt.Sprintf("/ui/test-sign-in/%d", u.ID), nil, ""); r.status != http.StatusOK {
		t.Fatalf("sign in: status %d", r.status)
	}
}

// sessionCookie is the cookie the browser would send to /ui.
func (b *bundle) sessionCookie(t *testing.T) *http.Cookie {
	t.Helper()
	u, _ := url.Parse(b.srv.URL + "/ui/app/")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == DefaultCookieName {
			return c
		}
	}
	return nil
}

func (b *bundle) setSessionCookie(t *testing.T, value string) {
	t.Helper()
	u, _ := url.Parse(b.srv.URL + "/ui/")
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: DefaultCookieName, Value: value, Path: "/ui"}})
}

func wantSignedIn(t *testing.T, r response, u persistence.User) {
	t.Helper()
	if r.status != http.StatusOK || !strings.HasPrefix(r.body, fmt.Sprintf("user=%d csrf=", u.ID)) {
		t.Fatalf("page = %d %q; want it shown to user %d", r.status, r.body, u.ID)
	}
}

func wantSignInRedirect(t *testing.T, r response) {
	t.Helper()
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), SignInPath+"?next=") {
		t.Fatalf("page = %d Location %q; want a redirect to sign in", r.status, r.header.Get("Location"))
	}
}

type tLogWriter struct{ t *testing.T }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestRoundTrip(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		b := setup(t, s)
		wantSignInRedirect(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""))

		b.signIn(t, b.alice)
		c := b.sessionCookie(t)
		if c == nil {
			t.Fatal("no session cookie after sign-in")
		}
		r := b.do(t, http.MethodGet, "/ui/app/", nil, "")
		wantSignedIn(t, r, b.alice)
		token := strings.TrimPrefix(r.body, fmt.Sprintf("user=%d csrf=", b.alice.ID))
		if len(token) != 43 || strings.ContainsAny(token, "+/=") {
			t.Errorf("CSRF token %q; want 32 bytes of unpadded base64url", token)
		}
		b.clock.Advance(5 * time.Minute)
		if again := b.do(t, http.MethodGet, "/ui/app/x", nil, ""); !strings.HasSuffix(again.body, "csrf="+token) {
			t.Errorf("CSRF token changed within the session: %q, then %q", token, again.body)
		}

		// Another user's sign-in in the same browser replaces the session.
		b.signIn(t, b.bob)
		wantSignedIn(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""), b.bob)

		b.do(t, http.MethodPost, "/ui/sign-out", nil, "")
		if c := b.sessionCookie(t); c != nil {
			t.Errorf("session cookie %q kept after Clear", c.Value)
		}
		wantSignInRedirect(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""))
	})
}

func TestIssuedCookieAttributes(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("secure=%v", secure), func(t *testing.T) {
			s := dbtest.SQLite(t)
			u := newUser(t, s, "alice")
			now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
			m, err := NewManager(Config{Key: GenerateKey(), CookieName: "wharf_s", Secure: secure,
				IdleTimeout: testIdle, AbsoluteTimeout: testAbsolute, Store: s, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			if _, err := m.Issue(rec, signInRequest(), u); err != nil {
				t.Fatal(err)
			}
			cs := rec.Result().Cookies()
			if len(cs) != 1 {
				t.Fatalf("Issue set %d cookies", len(cs))
			}
			c := cs[0]
			wantPath := "/ui"
			if secure {
				wantPath = "/"
			}
			if c.Name != "wharf_s" || c.Path != wantPath || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode ||
				c.Secure != secure || c.MaxAge != int(testAbsolute/time.Second) {
				t.Errorf("cookie = %+v", c)
			}
			if strings.Contains(c.Value, strconv.FormatInt(u.ID, 10)+",") || strings.Contains(c.Value, "alice") {
				t.Errorf("cookie value is not sealed: %q", c.Value)
			}
		})
	}
}

func TestIssueRefusesUserWhoCannotSignIn(t *testing.T) {
	s := dbtest.SQLite(t)
	m, err := NewManager(Config{Key: GenerateKey(), IdleTimeout: testIdle, AbsoluteTimeout: testAbsolute, Store: s})
	if err != nil {
		t.Fatal(err)
	}
	u := newUser(t, s, "alice")
	u.Disabled = true
	rec := httptest.NewRecorder()
	if _, err := m.Issue(rec, signInRequest(), u); err == nil {
		t.Error("Issue for a disabled user succeeded")
	}
	if len(rec.Result().Cookies()) != 0 {
		t.Error("a refused Issue set a cookie")
	}
}

func TestSessionEnds(t *testing.T) {
	tests := []struct {
		name string
		end  func(t *testing.T, b *bundle)
	}{
		{"tampered cookie", func(t *testing.T, b *bundle) {
			v := []byte(b.sessionCookie(t).Value)
			i := len(v) / 2
			if v[i] == 'A' {
				v[i] = 'B'
			} else {
				v[i] = 'A'
			}
			b.setSessionCookie(t, string(v))
		}},
		{"truncated cookie", func(t *testing.T, b *bundle) {
			b.setSessionCookie(t, b.sessionCookie(t).Value[:10])
		}},
		{"cookie sealed by another key", func(t *testing.T, b *bundle) {
			other, err := NewManager(Config{Key: GenerateKey(), IdleTimeout: testIdle,
				AbsoluteTimeout: testAbsolute, Store: b.store, Now: b.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			if _, err := other.Issue(rec, signInRequest(), b.alice); err != nil {
				t.Fatal(err)
			}
			b.setSessionCookie(t, rec.Result().Cookies()[0].Value)
		}},
		{"idle lifetime", func(t *testing.T, b *bundle) { b.clock.Advance(testIdle) }},
		{"absolute lifetime despite use", func(t *testing.T, b *bundle) {
			step := testIdle - time.Minute
			for elapsed := time.Duration(0); elapsed+step < testAbsolute; elapsed += step {
				b.clock.Advance(step)
				wantSignedIn(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""), b.alice)
			}
			b.clock.Advance(step)
		}},
		{"generation bumped (sign out everywhere)", func(t *testing.T, b *bundle) {
			if err := b.store.BumpUserGeneration(context.Background(), b.alice.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{"user disabled in the store", func(t *testing.T, b *bundle) {
			if err := b.store.SetUserDisabled(context.Background(), b.alice.ID, true); err != nil {
				t.Fatal(err)
			}
		}},
		{"user disabled, generation unchanged", func(t *testing.T, b *bundle) {
			b.setUsers(func(ctx context.Context, idHash string) (persistence.User, error) {
				u, err := b.store.GetUISessionUser(ctx, idHash)
				u.Disabled = true
				return u, err
			})
		}},
		{"user deleted", func(t *testing.T, b *bundle) {
			if err := b.store.DeleteUser(context.Background(), b.alice.ID); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
				t.Parallel()
				b := setup(t, s)
				b.signIn(t, b.alice)
				wantSignedIn(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""), b.alice)
				tt.end(t, b)
				wantSignInRedirect(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""))
				if r := b.do(t, http.MethodPost, "/ui/app/", nil, ""); r.status != http.StatusUnauthorized {
					t.Errorf("POST without a session = %d, want 401", r.status)
				}
			})
		})
	}
}

func TestTouch(t *testing.T) {
	b := setup(t, dbtest.SQLite(t))
	b.signIn(t, b.alice)

	b.clock.Advance(30 * time.Second)
	if r := b.do(t, http.MethodGet, "/ui/app/", nil, ""); r.header.Get("Set-Cookie") != "" {
		t.Errorf("a request within a minute of the last rewrote the cookie: %q", r.header.Get("Set-Cookie"))
	}
	b.clock.Advance(31 * time.Second)
	if r := b.do(t, http.MethodGet, "/ui/app/", nil, ""); r.header.Get("Set-Cookie") == "" {
		t.Error("a request a minute after the last did not refresh the cookie")
	}
	// Use keeps the session alive past the idle lifetime counted from sign-in.
	for range 3 {
		b.clock.Advance(testIdle - time.Minute)
		wantSignedIn(t, b.do(t, http.MethodGet, "/ui/app/", nil, ""), b.alice)
	}
}

func TestStoreFailureIsNotSignOut(t *testing.T) {
	b := setup(t, dbtest.SQLite(t))
	b.signIn(t, b.alice)
	b.setUsers(func(context.Context, string) (persistence.User, error) {
		return persistence.User{}, errors.New("database is down")
	})
	r := b.do(t, http.MethodGet, "/ui/app/", nil, "")
	if r.status != http.StatusInternalServerError || strings.Contains(r.body, "database") {
		t.Errorf("page with a failing store = %d %q; want a bare 500", r.status, r.body)
	}
	if b.sessionCookie(t) == nil {
		t.Error("a store failure dropped the session cookie")
	}
}

func TestNewManagerRefusesBadConfig(t *testing.T) {
	s := dbtest.SQLite(t)
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no store", Config{IdleTimeout: time.Minute, AbsoluteTimeout: time.Hour}},
		{"no idle lifetime", Config{Store: s, AbsoluteTimeout: time.Hour}},
		{"no absolute lifetime", Config{Store: s, IdleTimeout: time.Minute}},
		{"idle beyond absolute", Config{Store: s, IdleTimeout: 2 * time.Hour, AbsoluteTimeout: time.Hour}},
	}
	for _, tt := range tests {
		if _, err := NewManager(tt.cfg); err == nil {
			t.Errorf("%s: NewManager succeeded", tt.name)
		}
	}
}
