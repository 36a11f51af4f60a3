package ui

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	otptotp "github.com/pquerna/otp/totp"

	"wharf/internal/auth/totp"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/secret"
	"wharf/internal/ui/session"
	"wharf/internal/ui/static"
)

const testPassword = "copper kettle walks sideways"

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type bundle struct {
	store *db.Store
	clock *clock
	srv   *httptest.Server
}

// newBundle is a fresh store and a clock standing at a fixed time.
func newBundle(t *testing.T) *bundle {
	return &bundle{store: dbtest.SQLite(t), clock: &clock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}}
}

// newServer builds a Server over b's store and clock with a fresh session key and
// secrets key; more sets further Deps.
func newServer(t *testing.T, b *bundle, more func(*Deps)) *Server {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(tLogWriter{t}, nil))
	key, err := secret.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := session.NewManager(session.Config{
		Key: session.GenerateKey(), IdleTimeout: time.Hour, AbsoluteTimeout: 12 * time.Hour,
		Store: b.store, Now: b.clock.Now, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	d := Deps{Store: b.store, Sessions: mgr, Sealer: box, Logger: logger, Issuer: "Wharf", Now: b.clock.Now}
	if more != nil {
		more(&d)
	}
	s, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := newBundle(t)
	s := newServer(t, b, nil)
	mux := http.NewServeMux()
	mux.Handle("/ui/", s.Handler())
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	return b
}

type tLogWriter struct{ t *testing.T }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// client is a browser: it keeps cookies and does not follow redirects, so
// tests see each answer.
type client struct {
	b    *bundle
	http *http.Client
	// seen collects every response body, for the canary checks.
	seen []string
}

func (b *bundle) client(t *testing.T) *client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &client{b: b, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type response struct {
	status int
	header http.Header
	body   string
}

func (c *client) do(t *testing.T, method, path string, form url.Values) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.b.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	c.seen = append(c.seen, string(data))
	return response{status: res.StatusCode, header: res.Header, body: string(data)}
}

func (c *client) get(t *testing.T, path string) response { return c.do(t, http.MethodGet, path, nil) }
func (c *client) post(t *testing.T, path string, form url.Values) response {
	return c.do(t, http.MethodPost, path, form)
}

// newUser creates a user with a set-up link, as wharf users create does, and
// returns the link's path.
func (b *bundle) newUser(t *testing.T, name string) string {
	t.Helper()
	var raw [32]byte
	rand.Read(raw[:])
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	expires := b.clock.Now().Add(24 * time.Hour)
	_, err := b.store.CreateUser(context.Background(), persistence.User{Name: persistence.UserName(name),
		Role: persistence.RoleAdmin, SetupTokenHash: setupTokenHash(token), SetupExpiresAt: &expires})
	if err != nil {
		t.Fatal(err)
	}
	return "/ui/setup/" + token
}

var (
	stateRE  = regexp.MustCompile(`name="state" value="([^"]+)"`)
	secretRE = regexp.MustCompile(`Key: <code class="mono">([A-Z2-7]+)</code>`)
	codesRE  = regexp.MustCompile(`\b[0-9a-z]{5}-[0-9a-z]{5}\b`)
	csrfRE   = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
)

func match(t *testing.T, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, body)
	}
	return m[1]
}

func (b *bundle) code(t *testing.T, secret string) string {
	t.Helper()
	c, err := otptotp.GenerateCodeCustom(secret, b.clock.Now(), otptotp.ValidateOpts{
		Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// enroll completes the set-up link of a new user and returns the TOTP secret
// and the recovery codes. The clock then moves on a step, so the enrolment
// code is not the current one.
func (b *bundle) enroll(t *testing.T, c *client, name string) (secret string, codes []string) {
	t.Helper()
	secret, _, codes = b.completeSetup(t, c, name)
	b.clock.Add(30 * time.Second)
	return secret, codes
}

// completeSetup creates a user and completes their set-up link now; it returns the TOTP
// secret, the code the set-up spent and the recovery codes.
func (b *bundle) completeSetup(t *testing.T, c *client, name string) (secret, spent string, codes []string) {
	t.Helper()
	link := b.newUser(t, name)
	form := c.get(t, link)
	if form.status != http.StatusOK {
		t.Fatalf("GET set-up link = %d", form.status)
	}
	secret = match(t, secretRE, form.body)
	spent = b.code(t, secret)
	done := c.post(t, link, url.Values{"state": {match(t, stateRE, form.body)}, "password": {testPassword},
		"password_confirm": {testPassword}, "code": {spent}})
	if done.status != http.StatusOK {
		t.Fatalf("POST set-up = %d\n%s", done.status, done.body)
	}
	return secret, spent, codesRE.FindAllString(done.body, -1)
}

// signIn runs both steps and returns the final answer.
func (c *client) signIn(t *testing.T, name, password, code, next string) response {
	t.Helper()
	token := c.signInToken(t)
	first := c.post(t, "/ui/sign-in", url.Values{"name": {name}, "password": {password}, "next": {next}, "sign_in_token": {token}})
	if first.status != http.StatusOK {
		return first
	}
	return c.post(t, "/ui/sign-in", url.Values{"state": {match(t, stateRE, first.body)}, "code": {code}, "sign_in_token": {token}})
}

var signInTokenRE = regexp.MustCompile(`name="sign_in_token" value="([^"]+)"`)

// signInToken loads the sign-in form, as a browser does before it posts it.
func (c *client) signInToken(t *testing.T) string {
	t.Helper()
	r := c.get(t, "/ui/sign-in")
	if r.status != http.StatusOK {
		t.Fatalf("GET sign-in = %d", r.status)
	}
	return match(t, signInTokenRE, r.body)
}

// TestSignInFormFromElsewhere refuses a sign-in post without the form's token: another
// site cannot sign a browser into an account of its choosing.
func TestSignInFormFromElsewhere(t *testing.T) {
	b := setup(t)
	c := b.client(t)
	for _, tc := range []struct {
		name  string
		token func() string
	}{
		{"no token", func() string { return "" }},
		{"another token", func() string { c.signInToken(t); return strings.Repeat("A", 43) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.post(t, "/ui/sign-in", url.Values{"name": {"alice"}, "password": {"x"}, "sign_in_token": {tc.token()}})
			if r.status != http.StatusForbidden {
				t.Errorf("sign-in post = %d, want 403", r.status)
			}
		})
	}
}

func TestSetupSignInSignOut(t *testing.T) {
	b := setup(t)
	c := b.client(t)
	link := b.newUser(t, "alice")

	form := c.get(t, link)
	if form.status != http.StatusOK || !strings.Contains(form.body, "<svg") {
		t.Fatalf("GET set-up link = %d; want the form with a QR code\n%s", form.status, form.body)
	}
	secret := match(t, secretRE, form.body)
	done := c.post(t, link, url.Values{"state": {match(t, stateRE, form.body)}, "password": {testPassword},
		"password_confirm": {testPassword}, "code": {b.code(t, secret)}})
	codes := codesRE.FindAllString(done.body, -1)
	if done.status != http.StatusOK || len(codes) != 10 {
		t.Fatalf("POST set-up = %d with %d recovery codes; want 200 with 10\n%s", done.status, len(codes), done.body)
	}
	afterSetup := len(c.seen)

	for _, method := range []string{http.MethodGet, http.MethodPost} {
		if r := c.do(t, method, link, url.Values{}); r.status != http.StatusNotFound {
			t.Errorf("%s used link = %d, want 404", method, r.status)
		}
	}
	u, err := b.store.GetUserByName(context.Background(), "alice")
	if err != nil || !u.SetUp() || len(u.RecoveryHashes) != 10 || u.SetupTokenHash != "" {
		t.Fatalf("stored user after set-up = %+v, %v", u, err)
	}
	if strings.Contains(string(u.SealedTOTP), secret) {
		t.Error("TOTP secret stored in the clear")
	}

	// The enrolment code is spent; a code of the next step signs in.
	b.clock.Add(30 * time.Second)
	r := c.signIn(t, "alice", testPassword, b.code(t, secret), "/ui/?from=test")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/?from=test" {
		t.Fatalf("sign-in = %d to %q, want 303 to /ui/?from=test\n%s", r.status, r.header.Get("Location"), r.body)
	}
	home := c.get(t, "/ui/")
	if home.status != http.StatusOK || !strings.Contains(home.body, "alice") || !strings.Contains(home.body, "Delivered") {
		t.Fatalf("GET /ui/ = %d\n%s", home.status, home.body)
	}
	if r := c.get(t, "/ui/sign-in"); r.status != http.StatusSeeOther {
		t.Errorf("GET sign-in while signed in = %d, want a redirect", r.status)
	}

	if r := c.post(t, "/ui/sign-out", url.Values{}); r.status != http.StatusForbidden {
		t.Errorf("sign-out without CSRF token = %d, want 403", r.status)
	}
	if r := c.get(t, "/ui/"); r.status != http.StatusOK {
		t.Fatalf("refused sign-out ended the session: GET /ui/ = %d", r.status)
	}
	out := c.post(t, "/ui/sign-out", url.Values{session.CSRFField: {match(t, csrfRE, home.body)}})
	if out.status != http.StatusSeeOther || out.header.Get("Location") != session.SignInPath {
		t.Fatalf("sign-out = %d to %q", out.status, out.header.Get("Location"))
	}
	if r := c.get(t, "/ui/"); r.status != http.StatusSeeOther {
		t.Errorf("GET /ui/ after sign-out = %d, want a redirect to sign in", r.status)
	}
	signIn := c.get(t, "/ui/sign-in")
	if !strings.Contains(signIn.body, "You are signed out.") {
		t.Error("sign-in page after sign-out shows no flash")
	}
	if again := c.get(t, "/ui/sign-in"); strings.Contains(again.body, "You are signed out.") {
		t.Error("flash shown twice")
	}

	for i, body := range c.seen[afterSetup:] {
		if strings.Contains(body, secret) || strings.Contains(body, testPassword) {
			t.Errorf("response %d after set-up contains the TOTP secret or the password", i)
		}
	}
	for i, body := range c.seen {
		if strings.Contains(body, testPassword) {
			t.Errorf("response %d contains the password", i)
		}
	}
}

func TestSetupRefusesWeakPassword(t *testing.T) {
	b := setup(t)
	c := b.client(t)
	link := b.newUser(t, "bob")
	form := c.get(t, link)
	state, secret := match(t, stateRE, form.body), match(t, secretRE, form.body)
	code := b.code(t, secret)

	tests := []struct {
		name, pw, pw2, code, want string
	}{
		{"too short", "kX9!q", "kX9!q", code, "Password is too short"},
		{"contains the name", "bob-the-builder-42", "bob-the-builder-42", code, "user name"},
		{"not the same", testPassword, testPassword + "x", code, "The two passwords are not the same."},
		{"wrong code", testPassword, testPassword, "000000", "The code is not right."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.post(t, link, url.Values{"state": {state}, "password": {tt.pw}, "password_confirm": {tt.pw2}, "code": {tt.code}})
			if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, tt.want) {
				t.Fatalf("POST = %d, want 422 with %q\n%s", r.status, tt.want, r.body)
			}
			if strings.Contains(r.body, tt.pw) || strings.Contains(r.body, tt.pw2) {
				t.Error("refused form shows a password")
			}
			if !strings.Contains(r.body, `value="`+tt.code+`"`) {
				t.Error("refused form lost the code")
			}
			if match(t, secretRE, r.body) != secret || match(t, stateRE, r.body) != state {
				t.Error("refused form changed the TOTP secret")
			}
		})
	}
	if r := c.get(t, link); r.status != http.StatusOK {
		t.Errorf("link after refusals = %d, want still usable", r.status)
	}
	if r := c.post(t, link, url.Values{"state": {"forged"}, "password": {testPassword}}); r.status != http.StatusSeeOther {
		t.Errorf("POST with a forged state = %d, want a redirect to a fresh form", r.status)
	}
}

func TestSetupLinkUnknownOrExpired(t *testing.T) {
	b := setup(t)
	c := b.client(t)
	link := b.newUser(t, "carol")
	if r := c.get(t, "/ui/setup/not-a-token"); r.status != http.StatusNotFound {
		t.Errorf("unknown link = %d, want 404", r.status)
	}
	b.clock.Add(24 * time.Hour)
	if r := c.get(t, link); r.status != http.StatusNotFound {
		t.Errorf("expired link = %d, want 404", r.status)
	}
}

func TestSignInRefusalsAreAlike(t *testing.T) {
	b := setup(t)
	c := b.client(t)
	secret, _ := b.enroll(t, c, "alice")
	// The password step's refusal never tells whether the account exists; the code
	// step's names the code, since only the right password reaches it.
	cases := []struct {
		name                 string
		user, password, code string
		refusal              string
	}{
		{"wrong password", "alice", "wrong password here", "", refusal},
		{"unknown name", "mallory", testPassword, "", refusal},
		{"invalid name", "Not A Name!", testPassword, "", refusal},
		{"wrong code", "alice", testPassword, "000000", codeRefusal},
		{"wrong recovery code", "alice", testPassword, "aaaaa-aaaaa", codeRefusal},
	}
	for _, tt := range cases {
		// Past any throttling delay, so each case meets the check itself.
		b.clock.Add(time.Hour)
		name := tt.name
		refusalHTML := `<div class="flash flash-danger" role="alert"><p>` + template.HTMLEscapeString(tt.refusal) + `</p></div>`
		r := c.signIn(t, tt.user, tt.password, tt.code, "")
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, refusalHTML) {
			t.Errorf("%s = %d; want 422 with the refusal\n%s", name, r.status, r.body)
		}
		if strings.Contains(r.body, secret) {
			t.Errorf("%s shows the TOTP secret", name)
		}
	}
}

func TestTOTPCodeWorksOnce(t *testing.T) {
	b := setup(t)
	secret, _ := b.enroll(t, b.client(t), "alice")
	code := b.code(t, secret)
	if r := b.client(t).signIn(t, "alice", testPassword, code, ""); r.status != http.StatusSeeOther {
		t.Fatalf("first use = %d, want 303", r.status)
	}
	if r := b.client(t).signIn(t, "alice", testPassword, code, ""); r.status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.body, codeReused) {
		t.Errorf("second use = %d, want the reused-code answer", r.status)
	}
}

// TestFirstSignInAfterSetup: right after set-up the app still shows the code the set-up
// spent. The sign-in says so instead of "wrong", counts no failure, and the app's next
// code signs in at once, however often the spent one was tried.
func TestFirstSignInAfterSetup(t *testing.T) {
	b := setup(t)
	c := b.client(t)
	secret, spent, _ := b.completeSetup(t, c, "alice")
	for i := range 5 {
		r := c.signIn(t, "alice", testPassword, spent, "")
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, codeReused) || strings.Contains(r.body, codeRefusal) {
			t.Fatalf("try %d with the set-up's code = %d, want the reused-code answer\n%s", i, r.status, r.body)
		}
	}
	b.clock.Add(totp.Period)
	if r := c.signIn(t, "alice", testPassword, b.code(t, secret), ""); r.status != http.StatusSeeOther {
		t.Fatalf("the next code = %d, want 303\n%s", r.status, r.body)
	}
}

func TestRecoveryCodeWorksOnce(t *testing.T) {
	b := setup(t)
	_, codes := b.enroll(t, b.client(t), "alice")
	c := b.client(t)
	if r := c.signIn(t, "alice", testPassword, strings.ToUpper(codes[3]), ""); r.status != http.StatusSeeOther {
		t.Fatalf("first use = %d, want 303", r.status)
	}
	if r := c.get(t, "/ui/"); r.status != http.StatusOK {
		t.Errorf("GET /ui/ after a recovery sign-in = %d", r.status)
	}
	if r := b.client(t).signIn(t, "alice", testPassword, codes[3], ""); r.status != http.StatusUnprocessableEntity {
		t.Errorf("second use = %d, want the refusal", r.status)
	}
	u, err := b.store.GetUserByName(context.Background(), "alice")
	if err != nil || len(u.RecoveryHashes) != 9 {
		t.Errorf("recovery codes left = %d, %v; want 9", len(u.RecoveryHashes), err)
	}
}

func TestSignInThrottles(t *testing.T) {
	b := setup(t)
	secret, _ := b.enroll(t, b.client(t), "alice")
	c := b.client(t)
	// Three failures are free; the fourth makes the next attempt wait one second.
	for i := range 4 {
		if r := c.signIn(t, "alice", "wrong password here", "", ""); r.status != http.StatusUnprocessableEntity {
			t.Fatalf("failure %d = %d, want 422", i+1, r.status)
		}
	}
	r := c.signIn(t, "alice", testPassword, b.code(t, secret), "")
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "1" {
		t.Fatalf("attempt while throttled = %d, Retry-After %q; want 429 and 1", r.status, r.header.Get("Retry-After"))
	}
	// The address is throttled too, whatever the name.
	if r := c.signIn(t, "bob", "anything at all", "", ""); r.status != http.StatusTooManyRequests {
		t.Errorf("other name from the same address = %d, want 429", r.status)
	}
	b.clock.Add(time.Second)
	if r := c.signIn(t, "alice", testPassword, b.code(t, secret), ""); r.status != http.StatusSeeOther {
		t.Errorf("attempt after the wait = %d, want 303\n%s", r.status, r.body)
	}
}

func TestSignInNext(t *testing.T) {
	b := setup(t)
	secret, _ := b.enroll(t, b.client(t), "alice")
	for _, tt := range []struct{ next, want string }{
		{"//evil.example/", "/ui/"},
		{"https://evil.example/ui/", "/ui/"},
		{"/ui/messages?status=error", "/ui/messages?status=error"},
	} {
		b.clock.Add(30 * time.Second)
		r := b.client(t).signIn(t, "alice", testPassword, b.code(t, secret), tt.next)
		if got := r.header.Get("Location"); r.status != http.StatusSeeOther || got != tt.want {
			t.Errorf("next %q: %d to %q, want %q", tt.next, r.status, got, tt.want)
		}
	}
	if r := b.client(t).get(t, "/ui/"); r.status != http.StatusSeeOther ||
		r.header.Get("Location") != "/ui/sign-in?next=%2Fui%2F" {
		t.Errorf("GET /ui/ signed out = %d to %q", r.status, r.header.Get("Location"))
	}
}

func TestPagesHeadersAndCSP(t *testing.T) {
	b := setup(t)
	c := b.client(t)
	link := b.newUser(t, "dave")
	inlineScript := regexp.MustCompile(`<script(\s[^>]*)?>`)
	handlerAttr := regexp.MustCompile(`\son[a-z]+=`)
	for _, path := range []string{"/ui/sign-in", link, "/ui/no-such-page", "/ui/setup/unknown"} {
		r := c.get(t, path)
		if got := r.header.Get("Content-Security-Policy"); got != session.ContentSecurityPolicy {
			t.Errorf("GET %s: CSP = %q", path, got)
		}
		for _, h := range []string{"X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy", "Cache-Control"} {
			if r.header.Get(h) == "" {
				t.Errorf("GET %s: no %s", path, h)
			}
		}
		for _, tag := range inlineScript.FindAllString(r.body, -1) {
			if !strings.Contains(tag, " src=") {
				t.Errorf("GET %s: inline script %s", path, tag)
			}
		}
		if strings.Contains(r.body, " style=") || strings.Contains(r.body, "<style") || handlerAttr.MatchString(r.body) {
			t.Errorf("GET %s: inline style or event handler", path)
		}
		if !strings.Contains(r.body, static.URL("app.css")) {
			t.Errorf("GET %s: no stylesheet link", path)
		}
	}
	if r := c.get(t, "/ui/no-such-page"); r.status != http.StatusNotFound || !strings.Contains(r.body, "Page not found") {
		t.Errorf("unknown page = %d", r.status)
	}
	css := c.get(t, static.URL("app.css"))
	if css.status != http.StatusOK || !strings.Contains(css.header.Get("Cache-Control"), "immutable") {
		t.Errorf("GET app.css = %d, Cache-Control %q", css.status, css.header.Get("Cache-Control"))
	}
}

func TestBodyLimit(t *testing.T) {
	b := setup(t)
	r := b.client(t).post(t, "/ui/sign-in", url.Values{"name": {"alice"}, "pad": {strings.Repeat("x", maxBody)}})
	if r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized sign-in = %d, want 413", r.status)
	}
}
