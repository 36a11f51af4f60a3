package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"wharf/internal/auth/oidc/oidctest"
	"wharf/internal/persistence"
)

// browser is one headless Chromium tab on the gateway, with everything that went wrong on
// the pages it visited: console errors, uncaught exceptions, CSP violations, failed
// requests and answers of 400 and above.
type browser struct {
	t   *testing.T
	h   *harness
	ctx context.Context
	// shots is where screenshots go.
	shots string
	// secret is the administrator's TOTP secret, read from the set-up page.
	secret string

	mu       sync.Mutex
	problems []string

	// sso is the fake OpenID Connect provider of the single sign-on steps.
	sso *oidctest.Provider
}

// reportCSP makes a CSP violation a console error whatever the browser version logs on
// its own. It is added through DevTools, which the page's CSP does not govern.
const reportCSP = `document.addEventListener("securitypolicyviolation", function (e) {
	console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber);
});`

func newBrowser(t *testing.T, bin string, h *harness) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })

	b := &browser{t: t, h: h, ctx: ctx, shots: os.Getenv("WHARF_TEST_SCREENSHOTS")}
	if b.shots == "" {
		b.shots = t.TempDir()
	} else if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Listen(ctx, b.event); err != nil {
		t.Fatalf("start Chromium (%s): %v", bin, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: reportCSP})
		return err
	})); err != nil {
		t.Fatalf("Chromium: %v", err)
	}
	return b
}

// event collects what went wrong; it runs on the tab's reading goroutine, so it only
// records, and answers a confirm dialog from another goroutine.
func (b *browser) event(ev any) {
	var problem string
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range e.Args {
				args = append(args, strings.Trim(string(a.Value), `"`)+a.Description)
			}
			problem = "console " + string(e.Type) + ": " + strings.Join(args, " ")
		}
	case *runtime.EventExceptionThrown:
		problem = "exception: " + e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			problem += " " + e.ExceptionDetails.Exception.Description
		}
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError {
			problem = fmt.Sprintf("log %s: %s (%s)", e.Entry.Source, e.Entry.Text, e.Entry.URL)
		}
	case *network.EventLoadingFailed:
		// A request the browser cancels itself, such as a live-update stream when the
		// page navigates away, is not a failure of the gateway.
		if !e.Canceled {
			problem = fmt.Sprintf("request failed: %s %s %s", e.Type, e.ErrorText, e.BlockedReason)
		}
	case *network.EventResponseReceived:
		if e.Response.Status >= 400 {
			problem = fmt.Sprintf("answer %d for %s", e.Response.Status, e.Response.URL)
		}
	case *page.EventJavascriptDialogOpening:
		// The pages confirm deletes and the like; the operator says yes.
		go chromedp.Run(b.ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
			return err
		}))
	}
	if problem != "" {
		b.mu.Lock()
		b.problems = append(b.problems, problem)
		b.mu.Unlock()
	}
}

// takeProblems returns and clears what went wrong so far.
func (b *browser) takeProblems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.problems
	b.problems = nil
	return p
}

// checkClean fails the test with everything that went wrong on the pages since the last check.
func (b *browser) checkClean(t *testing.T, where string) {
	t.Helper()
	if p := b.takeProblems(); len(p) > 0 {
		t.Errorf("%s:\n  %s", where, strings.Join(p, "\n  "))
	}
}

// do runs actions with a deadline.
func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func run[T any](t *testing.T, b *browser, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// open navigates to path and waits for the page's main element.
func (b *browser) open(t *testing.T, path string) {
	t.Helper()
	b.do(t, "open "+path, chromedp.Navigate(b.h.base+path), chromedp.WaitVisible(chromedp.CSS("main")))
}

// location is the path (and query) the tab shows.
func (b *browser) location(t *testing.T) string {
	t.Helper()
	loc := run(t, b, "location", chromedp.Location())
	return strings.TrimPrefix(loc, b.h.base)
}

// mainText is the text of the page's main element.
func (b *browser) mainText(t *testing.T) string {
	t.Helper()
	return run(t, b, "read the page", chromedp.Text(chromedp.CSS("main")))
}

// submit clicks the button and waits for the page it leads to.
func (b *browser) submit(t *testing.T, button string, wait chromedp.CSS) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	// The mark lives in the current document only: its absence shows the form's answer
	// has replaced the page, so the checks that follow read the new page, not the old.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.wharfBeforeSubmit = true`), chromedp.Click(chromedp.CSS(button))); err != nil {
		t.Fatalf("submit %s: %v; the browser is at %s showing:\n%s", button, err, b.location(t), b.mainText(t))
	}
	for {
		replaced, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.wharfBeforeSubmit === undefined && document.readyState === "complete"`))
		if err == nil && replaced {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("submit %s: the page was not replaced within 30 s; the browser is at %s showing:\n%s", button, b.location(t), b.mainText(t))
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for work
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(wait)); err != nil {
		t.Fatalf("submit %s and wait for %s: %v; the browser is at %s showing:\n%s", button, wait, err, b.location(t), b.mainText(t))
	}
}

// waitText waits, without reloading, until the main element shows text.
func (b *browser) waitText(t *testing.T, text string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(b.mainText(t), text) {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not show %q after %s:\n%s", b.location(t), text, within, b.mainText(t))
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for work
	}
}

// chromiumNames are the names Chromium's binary goes by in the distributions' packages.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// chromium is the browser binary: WHARF_TEST_CHROMIUM when set, which must then run, else
// the first of chromiumNames on the PATH. Without either the browser tests cannot run
// here and are skipped, saying what to install.
func chromium(t *testing.T) string {
	if bin := os.Getenv("WHARF_TEST_CHROMIUM"); bin != "" {
		path, err := exec.LookPath(bin)
		if err != nil {
			t.Fatalf("WHARF_TEST_CHROMIUM=%s: %v", bin, err)
		}
		return path
	}
	for _, name := range chromiumNames {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skipf("no Chromium binary: install one (Debian: apt-get install chromium) or name it in WHARF_TEST_CHROMIUM; looked for %v on the PATH", chromiumNames)
	return ""
}

// TestBrowserFlows drives real headless Chromium through the operator's flows, one step
// after another on one gateway; a failed step stops the ones after it. Every page must be
// free of console errors, CSP violations and failed requests.
func TestBrowserFlows(t *testing.T) {
	bin := chromium(t)
	h := start(t)
	b := newBrowser(t, bin, h)
	runSteps(t, b, []browserStep{
		{"problems are seen", stepProblemsAreSeen},
		{"first administrator set-up", stepSetup},
		{"sign in", stepSignIn},
		{"theme toggle", stepThemeToggle},
		{"create a partner with its AS2 profile", stepCreatePartner},
		{"create a route", stepCreateRoute},
		{"screenshots", stepScreenshots},
		{"key columns in view", stepKeyColumns},
		{"send a message by hand", stepSendByHand},
		{"trace a message", stepTrace},
		{"redeliver a failed delivery", stepRedeliver},
		{"skip a dead letter", stepDeadLetters},
		{"configure single sign-on", stepConfigureSSO},
		{"sign out", stepSignOut},
		{"single sign-on", stepSingleSignOn},
	})
	t.Logf("screenshots in %s", b.shots)
}

// browserStep is one step of a browser flow.
type browserStep struct {
	name string
	run  func(t *testing.T, b *browser)
}

// runSteps runs the steps in order, each a subtest that must leave the pages clean; a
// failed step stops the ones after it, which need it.
func runSteps(t *testing.T, b *browser, steps []browserStep) {
	t.Helper()
	for _, s := range steps {
		ok := t.Run(s.name, func(t *testing.T) {
			s.run(t, b)
			b.checkClean(t, "after "+s.name)
		})
		if !ok {
			t.Fatalf("step %q failed; the steps after it need it", s.name)
		}
	}
}

// stepProblemsAreSeen holds the net that catches problems: an inline script the page's CSP
// refuses and a missing page must both be reported.
func stepProblemsAreSeen(t *testing.T, b *browser) {
	b.open(t, "/ui/sign-in")
	b.checkClean(t, "sign-in page")
	run(t, b, "add an inline script", chromedp.Evaluate[chromedp.Void](
		`var s = document.createElement("script"); s.textContent = "window.inlineRan = true"; document.head.appendChild(s)`))
	b.open(t, "/ui/no-such-page")
	got := strings.Join(b.takeProblems(), "\n")
	for _, want := range []string{"CSP violation", "answer 404"} {
		if !strings.Contains(got, want) {
			t.Errorf("the browser reported no %q; it reported:\n%s", want, got)
		}
	}
	if ran := run(t, b, "read", chromedp.Evaluate[*bool](`window.inlineRan || null`)); ran != nil {
		t.Error("an inline script ran despite the CSP")
	}
}

var keyRE = regexp.MustCompile(`^[A-Z2-7]{16,}$`)

// stepSetup follows the first administrator's set-up link, as `wharf standalone` prints
// it for a new database, with a code computed from the key the page shows.
func stepSetup(t *testing.T, b *browser) {
	link := b.h.setupLink("admin", persistence.RoleAdmin)
	b.open(t, link)
	b.secret = strings.TrimSpace(run(t, b, "read the key", chromedp.Text(chromedp.CSS(".field-hint code.mono"))))
	if !keyRE.MatchString(b.secret) {
		t.Fatalf("the set-up page shows the key %q", b.secret)
	}
	b.do(t, "fill in the set-up form",
		chromedp.SendKeys(chromedp.CSS("#password"), testPassword),
		chromedp.SendKeys(chromedp.CSS("#password_confirm"), testPassword),
		chromedp.SendKeys(chromedp.CSS("#code"), totpCode(t, b.secret, time.Now())),
	)
	b.submit(t, "form button[type=submit]", "a[href='/ui/sign-in']")
	if text := b.mainText(t); !strings.Contains(text, "Your account is ready") {
		t.Fatalf("set-up ended on:\n%s", text)
	}
	b.shoot(t, "setup-done", 1280)
}

// stepSignIn signs in with the password, then a code.
func stepSignIn(t *testing.T, b *browser) {
	b.do(t, "open sign-in", chromedp.Click(chromedp.CSS("a[href='/ui/sign-in']")), chromedp.WaitVisible(chromedp.CSS("#password")))
	b.do(t, "password step",
		chromedp.SendKeys(chromedp.CSS("#name"), "admin"),
		chromedp.SendKeys(chromedp.CSS("#password"), testPassword),
		chromedp.Click(chromedp.CSS("form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#code")),
	)
	b.do(t, "code step",
		chromedp.SendKeys(chromedp.CSS("#code"), signInCode(t, b.secret)),
		chromedp.Click(chromedp.CSS("form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS(".topbar")),
	)
	if loc := b.location(t); loc != "/ui/" {
		t.Errorf("signed in at %s, want /ui/", loc)
	}
}

// theme is the theme the page shows: data-theme, or the system's when unset.
func (b *browser) theme(t *testing.T) string {
	t.Helper()
	return run(t, b, "read the theme", chromedp.Evaluate[string](
		`document.documentElement.getAttribute("data-theme") || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light")`))
}

// setTheme clicks the topbar's toggle until the page shows the theme; the choice is kept
// for the pages after.
func (b *browser) setTheme(t *testing.T, want string) {
	t.Helper()
	for range 2 {
		if b.theme(t) == want {
			return
		}
		b.do(t, "toggle the theme", chromedp.Click(chromedp.CSS("[data-theme-toggle]")))
	}
	if got := b.theme(t); got != want {
		t.Fatalf("the toggle does not reach the %s theme (%s)", want, got)
	}
}

// stepThemeToggle switches the theme with the topbar's button and finds the choice kept
// on the next page, with the button telling its state.
func stepThemeToggle(t *testing.T, b *browser) {
	b.open(t, "/ui/")
	before := b.theme(t)
	b.do(t, "toggle the theme", chromedp.Click(chromedp.CSS("[data-theme-toggle]")))
	after := b.theme(t)
	if after == before {
		t.Fatalf("the theme toggle left the theme %s", before)
	}
	bg := func() string {
		return run(t, b, "read the background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	}
	first := bg()
	b.open(t, "/ui/partners")
	if got := b.theme(t); got != after {
		t.Errorf("the next page shows the %s theme, want the chosen %s", got, after)
	}
	// The toggle names the theme it switches to.
	other := map[string]string{"dark": "light", "light": "dark"}[after]
	if label := run(t, b, "read the toggle", chromedp.Evaluate[string](`document.querySelector("[data-theme-toggle]").textContent`)); label != "Switch to "+other+" theme" {
		t.Errorf("the toggle says %q in the %s theme", label, after)
	}
	b.setTheme(t, before)
	if bg() == first {
		t.Errorf("the page background stays %s in both themes", first)
	}
}

// stepCreatePartner creates a partner in its form, then its AS2 profile in the panel's.
func stepCreatePartner(t *testing.T, b *browser) {
	// The plain form: the wizard has a test of its own.
	b.open(t, "/ui/partners/new?basic=1")
	b.do(t, "fill in the partner",
		chromedp.SendKeys(chromedp.CSS("#name"), "b"),
		chromedp.SendKeys(chromedp.CSS("#display_name"), "Partner B"),
	)
	b.submit(t, "main form button[type=submit]", ".flash-success")
	if loc := b.location(t); loc != "/ui/partners/b" {
		t.Fatalf("after creating the partner the browser is at %s", loc)
	}
	b.do(t, "open the AS2 profile form", chromedp.Click(chromedp.CSS("a[href='/ui/partners/b/panels/as2/edit']")),
		chromedp.WaitVisible(chromedp.CSS("#f-as2_id")))
	b.do(t, "fill in the AS2 profile",
		chromedp.SendKeys(chromedp.CSS("#f-as2_id"), "PARTNER-B"),
		chromedp.SendKeys(chromedp.CSS("#f-endpoint_url"), "https://partner.example/as2"),
		chromedp.SetValue(chromedp.CSS("#f-signing_algorithm"), "none"),
		chromedp.SetValue(chromedp.CSS("#f-encryption_algorithm"), "none"),
		chromedp.SetValue(chromedp.CSS("#f-mdn_mode"), "none"),
		chromedp.Click(chromedp.CSS("#f-signed_mdn")),
		chromedp.Click(chromedp.CSS("#f-require_signed")),
		chromedp.Click(chromedp.CSS("#f-require_encrypted")),
	)
	b.submit(t, "main form button[type=submit]", ".flash-success")
	text := b.mainText(t)
	if !strings.Contains(text, "PARTNER-B") || !strings.Contains(text, "Check the connection") {
		t.Errorf("the partner page does not show the AS2 profile:\n%s", text)
	}
}

// stepCreateRoute adds a route in the routes page's form.
func stepCreateRoute(t *testing.T, b *browser) {
	b.open(t, "/ui/routes")
	b.do(t, "fill in the route",
		chromedp.SetValue(chromedp.CSS("#source"), "file_poller_default"),
		chromedp.SetValue(chromedp.CSS("#from"), "local"),
		chromedp.SetValue(chromedp.CSS("#to"), "b"),
		chromedp.SetValue(chromedp.CSS("#target"), "file_writer_default"),
	)
	b.submit(t, "form[action='/ui/routes'] button[type=submit]", ".flash-success")
	if text := b.mainText(t); !strings.Contains(text, "Route added") || !strings.Contains(text, "file_writer_default") {
		t.Errorf("the routes page after adding:\n%s", text)
	}
}

// shoot saves a screenshot of the whole page as NAME-WIDTH-THEME.png.
func (b *browser) shoot(t *testing.T, name string, width int) {
	t.Helper()
	png := run(t, b, "screenshot", chromedp.FullScreenshot(100))
	file := filepath.Join(b.shots, fmt.Sprintf("%s-%d-%s.png", name, width, b.theme(t)))
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// overflowing names the elements reaching past 375 px that no scrolling box holds. An
// absolutely positioned element escapes every scrolling box inside its containing block.
const overflowing = `Array.from(document.querySelectorAll("body *")).filter(function (e) {
	if (e.getBoundingClientRect().right <= 376) { return false; }
	var abs = getComputedStyle(e).position === "absolute";
	var cb = abs ? e.offsetParent : null;
	for (var p = e.parentElement; p; p = p.parentElement) {
		var o = getComputedStyle(p).overflowX;
		if ((o === "auto" || o === "scroll" || o === "hidden") && (!cb || p.contains(cb))) { return false; }
	}
	return true;
}).slice(0, 8).map(function (e) { return e.tagName.toLowerCase() + "." + e.className + " to " + Math.round(e.getBoundingClientRect().right) + " px"; })`

// stepScreenshots photographs the pages at desktop and phone widths in both themes, and
// requires no horizontal overflow at 375 px.
func stepScreenshots(t *testing.T, b *browser) {
	// A message, so its page and the lists have something to show.
	id := b.h.sendMessage("local", "b", "file_writer_default", "order-shown.xml", "<order>shown</order>")
	b.h.waitStatus(id, "delivered")
	pages := map[string]string{
		"dashboard": "/ui/", "messages": "/ui/messages", "partners": "/ui/partners", "partner": "/ui/partners/b",
		"partner-as2-form": "/ui/partners/b/panels/as2/edit", "organization": "/ui/organizations/local",
		"routes": "/ui/routes", "partner-form": "/ui/partners/new", "message": fmt.Sprintf("/ui/messages/%d", id),
		"notifications": "/ui/notifications", "audit": "/ui/audit",
	}
	b.eachLook(t, func(theme string, width int64) {
		for name, path := range pages {
			b.open(t, path)
			if width == 375 {
				if w := run(t, b, "measure", chromedp.Evaluate[int](`document.scrollingElement.scrollWidth`)); w > 375 {
					t.Errorf("%s is %d px wide at 375 px (%s theme); too wide: %v", path, w, theme,
						run(t, b, "find the overflow", chromedp.Evaluate[[]string](overflowing)))
				}
			}
			b.shoot(t, name, int(width))
			b.checkClean(t, fmt.Sprintf("%s at %d px, %s theme", path, width, theme))
		}
	})
}

// eachLook runs fn in both themes at 1280 and 375 px, and leaves the window at 1280 px.
func (b *browser) eachLook(t *testing.T, fn func(theme string, width int64)) {
	t.Helper()
	defer b.do(t, "restore the window", chromedp.EmulateViewport(1280, 900))
	for _, theme := range []string{"light", "dark"} {
		b.open(t, "/ui/")
		b.setTheme(t, theme)
		for _, width := range []int64{1280, 375} {
			b.do(t, "resize", chromedp.EmulateViewport(width, 900))
			fn(theme, width)
		}
	}
}

// stepSendByHand sends a file at /ui/send and watches its page reach delivered without a
// reload.
func stepSendByHand(t *testing.T, b *browser) {
	file := filepath.Join(t.TempDir(), "order-by-hand.xml")
	if err := os.WriteFile(file, []byte("<order>by hand</order>"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.open(t, "/ui/send")
	b.do(t, "fill in the message",
		chromedp.SetValue(chromedp.CSS("[name=from]"), "local"),
		chromedp.SetValue(chromedp.CSS("[name=to]"), "b"),
		chromedp.SetUploadFiles(chromedp.CSS("[name=file]"), []string{file}),
	)
	// A target chooser, where the page has one, sends to the file writer; else the route does.
	run(t, b, "choose the target", chromedp.Evaluate[chromedp.Void](
		`(function () { var s = document.querySelector("[name=target]"); if (s) { s.value = "file_writer_default"; } })()`))
	b.submit(t, "main form:has([name=file]) button[type=submit]", "main")
	b.watchDelivered(t)
}

// watchDelivered waits on a message's page for "delivered", and fails if the page was
// reloaded to show it.
func (b *browser) watchDelivered(t *testing.T) {
	t.Helper()
	if !regexp.MustCompile(`^/ui/messages/\d+$`).MatchString(b.location(t)) {
		t.Fatalf("after sending, the browser is at %s, not a message's page:\n%s", b.location(t), b.mainText(t))
	}
	run(t, b, "mark the page", chromedp.Evaluate[chromedp.Void](`window.wharfNoReload = true`))
	b.waitText(t, "delivered", 30*time.Second)
	if marked := run(t, b, "read the mark", chromedp.Evaluate[*bool](`window.wharfNoReload || null`)); marked == nil {
		t.Error("the page was reloaded to show the new state")
	}
}

// stepRedeliver makes a delivery fail for good, then redelivers it from its button and
// the confirmation once the partner answers again.
func stepRedeliver(t *testing.T, b *browser) {
	var up atomic.Bool
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(partner.Close)
	b.h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{
		"name": "poster_flaky", "enabled": true, "url": partner.URL + "/in", "retry": map[string]any{"max_retries": 0},
	}, nil)
	b.h.mustJSON("POST", "/api/v1/services/http-poster/poster_flaky/start", map[string]any{}, nil)
	id := b.h.sendMessage("local", "b", "poster_flaky", "order-flaky.xml", "<order>flaky</order>")
	b.h.waitStatus(id, "error")

	b.open(t, fmt.Sprintf("/ui/messages/%d", id))
	if text := b.mainText(t); !strings.Contains(text, "failed") {
		t.Fatalf("the message's page does not show the failed delivery:\n%s", text)
	}
	b.shoot(t, "message-failed", 1280)
	up.Store(true)
	// The button asks first, on a page of its own; confirming sends it again.
	b.submit(t, "a[href$='/redeliver']", "main")
	if text := b.mainText(t); !strings.Contains(text, "again?") {
		t.Fatalf("the redeliver button did not lead to its confirmation:\n%s", text)
	}
	b.submit(t, "form[action$='/redeliver'] button[type=submit]", "main")
	// The message's page follows the delivery live: no reload shows "delivered".
	b.watchDelivered(t)
}

// stepSignOut signs out from the topbar and finds the pages closed.
func stepSignOut(t *testing.T, b *browser) {
	b.open(t, "/ui/")
	b.submit(t, "form[action='/ui/sign-out'] button[type=submit]", "main")
	if text := b.mainText(t); !strings.Contains(text, "You are signed out.") {
		t.Errorf("after signing out:\n%s", text)
	}
	b.open(t, "/ui/partners")
	if loc := b.location(t); !strings.HasPrefix(loc, "/ui/sign-in") {
		t.Errorf("after signing out, /ui/partners shows %s", loc)
	}
}
