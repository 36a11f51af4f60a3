package browsertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	otptotp "github.com/pquerna/otp/totp"

	"wharf/internal/gateway"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/persistence"

	_ "wharf/internal/eventhook"
	_ "wharf/internal/notification"
	_ "wharf/internal/protocol/as2"
	_ "wharf/internal/protocol/file"
	_ "wharf/internal/protocol/httppost"
)

const testPassword = "copper kettle walks sideways"

// logBuffer keeps every log line of the gateway, for the canary check, and passes warnings
// and errors on to the test's log.
type logBuffer struct {
	t   *testing.T
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf.Write(p)
	l.mu.Unlock()
	if s := string(p); strings.Contains(s, "level=WARN") || strings.Contains(s, "level=ERROR") {
		l.t.Log(strings.TrimSpace(s))
	}
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// harness is a running standalone gateway on loopback with a temporary data directory.
type harness struct {
	t    *testing.T
	g    *gateway.Gateway
	gw   *gatewaytest.Gateway
	base string
	logs *logBuffer
}

// start opens and starts a gateway; the AS2 receiver gets a free port, so tests can run
// side by side, and the sweep runs often, so retries show within a test's patience.
func start(t *testing.T) *harness {
	t.Helper()
	return startOn(t, "")
}

// startOn is start on the database dbURL names (SQLite in the data directory when empty).
func startOn(t *testing.T, dbURL string) *harness {
	t.Helper()
	logs := &logBuffer{t: t}
	gw := gatewaytest.Start(t, gatewaytest.Options{
		DBURL: dbURL,
		// A fixed free port, not 0: the public URL derived from the address is the
		// redirect URL single sign-on hands the identity provider.
		HTTPAddr: "127.0.0.1:" + strconv.Itoa(gatewaytest.FreePort(t)),
		Log:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Settings: map[string]string{"sweep_interval": "100ms", "wakeup_backoff": "1s"},
		Plugins:  map[persistence.InstanceName]map[string]any{"as2_receiver_default": {"port": gatewaytest.FreePort(t)}},
	})
	return &harness{t: t, g: gw.Gateway, gw: gw, base: gw.URL(), logs: logs}
}

// setupLink creates a user with a pending set-up link, as `wharf users create` does, and
// returns the link's path.
func (h *harness) setupLink(name string, role persistence.UserRole) string {
	h.t.Helper()
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		h.t.Fatal(err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(token))
	expires := time.Now().Add(24 * time.Hour)
	_, err := h.g.Store.CreateUser(context.Background(), persistence.User{Name: persistence.UserName(name), Role: role,
		SetupTokenHash: hex.EncodeToString(sum[:]), SetupExpiresAt: &expires})
	if err != nil {
		h.t.Fatal(err)
	}
	return "/ui/setup/" + token
}

// totpCode is the code of the authenticator app at t.
func totpCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := otptotp.GenerateCodeCustom(secret, at, otptotp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// signInCode is a code for a sign-in right after enrolment: the next step's, which the
// gateway accepts (one step either way) although the enrolment used up the current one.
func signInCode(t *testing.T, secret string) string {
	return totpCode(t, secret, time.Now().Add(30*time.Second))
}

// api calls the REST API with the test token; it returns the status and the body.
func (h *harness) api(method, path, contentType string, body io.Reader) (int, []byte) {
	h.t.Helper()
	return h.gw.API(method, path, contentType, body)
}

// mustJSON calls the REST API with a JSON body and decodes a 2xx answer into out.
func (h *harness) mustJSON(method, path string, in, out any) []byte {
	h.t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	code, data := h.api(method, path, "application/json", body)
	if code/100 != 2 {
		h.t.Fatalf("%s %s = %d: %s", method, path, code, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			h.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return data
}

// sendMessage sends a document by hand through the REST API to a chosen target.
func (h *harness) sendMessage(from, to, target, name, body string) int64 {
	h.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("from", from)
	_ = mw.WriteField("to", to)
	_ = mw.WriteField("target", target)
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = io.WriteString(fw, body)
	_ = mw.Close()
	code, data := h.api("POST", "/api/v1/messages", mw.FormDataContentType(), &buf)
	if code != http.StatusCreated {
		h.t.Fatalf("send message = %d: %s", code, data)
	}
	var m struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		h.t.Fatal(err)
	}
	return m.ID
}

// client is a browser without script: it keeps cookies, does not follow redirects, and
// keeps every body it was answered, for the canary check.
type client struct {
	h    *harness
	http *http.Client
	csrf string

	mu   sync.Mutex
	seen []string
}

type response struct {
	status int
	header http.Header
	body   string
}

func (h *harness) client() *client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return &client{h: h, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (c *client) do(t *testing.T, method, path string, form url.Values) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.h.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	c.mu.Lock()
	c.seen = append(c.seen, method+" "+path+"\n"+headerText(resp.Header)+string(data))
	c.mu.Unlock()
	return response{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

func headerText(h http.Header) string {
	var b strings.Builder
	_ = h.Write(&b)
	return b.String()
}

func (c *client) get(t *testing.T, path string) response {
	t.Helper()
	return c.do(t, "GET", path, nil)
}

// post sends a form with the session's CSRF token, once signed in.
func (c *client) post(t *testing.T, path string, form url.Values) response {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if c.csrf != "" {
		form.Set("csrf_token", c.csrf)
	}
	return c.do(t, "POST", path, form)
}

var (
	stateRE       = regexp.MustCompile(`name="state" value="([^"]+)"`)
	secretRE      = regexp.MustCompile(`Key: <code class="mono">([A-Z2-7]+)</code>`)
	csrfRE        = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)
	signInTokenRE = regexp.MustCompile(`name="sign_in_token" value="([^"]+)"`)
)

func match(t *testing.T, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no match for %s in:\n%s", re, body)
	}
	return m[1]
}

// enroll completes a set-up link and returns the TOTP secret.
func (c *client) enroll(t *testing.T, link string) string {
	t.Helper()
	form := c.get(t, link)
	if form.status != http.StatusOK {
		t.Fatalf("GET set-up link = %d", form.status)
	}
	secret := match(t, secretRE, form.body)
	done := c.do(t, "POST", link, url.Values{"state": {match(t, stateRE, form.body)}, "password": {testPassword},
		"password_confirm": {testPassword}, "code": {totpCode(t, secret, time.Now())}})
	if done.status != http.StatusOK {
		t.Fatalf("POST set-up = %d\n%s", done.status, done.body)
	}
	return secret
}

// signIn runs both steps of the sign-in and keeps the session's CSRF token.
func (c *client) signIn(t *testing.T, name, code string) {
	t.Helper()
	token := match(t, signInTokenRE, c.get(t, "/ui/sign-in").body)
	first := c.do(t, "POST", "/ui/sign-in", url.Values{"name": {name}, "password": {testPassword}, "sign_in_token": {token}})
	if first.status != http.StatusOK {
		t.Fatalf("sign-in password step = %d", first.status)
	}
	second := c.do(t, "POST", "/ui/sign-in", url.Values{"state": {match(t, stateRE, first.body)}, "code": {code}, "sign_in_token": {token}})
	if second.status != http.StatusSeeOther {
		t.Fatalf("sign-in code step = %d\n%s", second.status, second.body)
	}
	c.csrf = match(t, csrfRE, c.get(t, "/ui/").body)
}

// signedIn is a new administrator's client, signed in; it returns the TOTP secret too.
func (h *harness) signedIn(t *testing.T, name string) (*client, string) {
	t.Helper()
	c := h.client()
	secret := c.enroll(t, h.setupLink(name, persistence.RoleAdmin))
	c.signIn(t, name, signInCode(t, secret))
	return c, secret
}
