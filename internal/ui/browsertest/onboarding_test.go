package browsertest

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"wharf/internal/persistence"
)

// Most a newcomer may do to make two instances partners, by issue 15.
const (
	onboardingMaxSubmissions = 12
	onboardingMaxTyped       = 25
)

// tally counts what a newcomer does in the browser: form submissions and fields typed
// into (a chosen file, a kept default and a pre-chosen select are not typed).
type tally struct {
	submissions, typed int
}

// walker is one instance's browser with the tally both instances share; its screenshots
// are named after the instance.
type walker struct {
	*browser
	tally  *tally
	prefix string
	step   int
}

// typeIn types text into the field, as a person does.
func (w *walker) typeIn(t *testing.T, field, text string) {
	t.Helper()
	w.tally.typed++
	w.do(t, "type into "+field, chromedp.SendKeys(chromedp.CSS(field), text))
}

// send submits the form by its button and waits for the page it leads to.
func (w *walker) send(t *testing.T, button string, wait chromedp.CSS) {
	t.Helper()
	w.tally.submissions++
	w.submit(t, button, wait)
}

// shootStep photographs the page as the next step, at 1280 and 375 px in both themes,
// and leaves the theme as it was.
func (w *walker) shootStep(t *testing.T, name string) {
	t.Helper()
	w.step++
	shot := fmt.Sprintf("onboarding-%s-%02d-%s", w.prefix, w.step, name)
	was := w.theme(t)
	for _, theme := range []string{was, map[string]string{"light": "dark", "dark": "light"}[was]} {
		w.applyTheme(t, theme)
		w.shootBoth(t, shot)
	}
	w.applyTheme(t, was)
}

// applyTheme shows the page in theme: by the topbar's toggle once signed in, else as the
// toggle stores it, since the signed-out pages have none.
func (w *walker) applyTheme(t *testing.T, theme string) {
	t.Helper()
	if toggles := run(t, w.browser, "find the toggle", chromedp.Evaluate[int](`document.querySelectorAll("[data-theme-toggle]").length`)); toggles > 0 {
		w.setTheme(t, theme)
		return
	}
	run(t, w.browser, "set the theme", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`localStorage.setItem("wharf-theme", %q); document.documentElement.setAttribute("data-theme", %[1]q)`, theme)))
}

// downloadProfile clicks the card's profile file link and returns the file the browser
// saved.
func (w *walker) downloadProfile(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run(t, w.browser, "allow downloads", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
		return err
	}))
	w.do(t, "download the profile file", chromedp.Click(chromedp.CSS("a[href='/ui/organizations/local/panels/as2/downloads/profile']")))
	deadline := time.Now().Add(30 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(files) == 1 {
			return files[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no profile file was downloaded into %s", dir)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for work
	}
}

// TestBrowserOnboardTwoInstances makes two gateways AS2 partners of each other from the
// UI alone, in headless Chromium, as a newcomer would: each administrator follows the
// set-up link, enrols the authenticator and signs in with its next code; each gives the
// organization its AS2 id in one form that also makes the key pair; each downloads the
// profile file from "Our AS2 details" and the other imports it in the partner wizard;
// then A checks the connection and sends the test message, which B answers with a signed
// receipt that A verifies. No shell command, no typed id. Every step is photographed at
// 1280 and 375 px in both themes, as onboarding-{a,b}-NN-STEP-WIDTH-THEME.png in
// WHARF_TEST_SCREENSHOTS (a temporary directory when unset).
func TestBrowserOnboardTwoInstances(t *testing.T) {
	bin := chromium(t)
	ha, hb := start(t), start(t)
	count := &tally{}
	a := &walker{browser: newBrowser(t, bin, ha), tally: count, prefix: "a"}
	b := &walker{browser: newBrowser(t, bin, hb), tally: count, prefix: "b"}

	for _, side := range []struct {
		w     *walker
		admin string
		as2ID string
	}{{a, "ada", "WHARF-A"}, {b, "bob", "WHARF-B"}} {
		onboardAdmin(t, side.w, side.admin)
		createIdentity(t, side.w, side.as2ID)
	}
	fileA, fileB := a.downloadProfile(t), b.downloadProfile(t)

	// Each imports the other's profile file in the wizard, the default preset kept.
	importPartner(t, b, fileA, "wharf-a")
	importPartner(t, a, fileB, "wharf-b")

	// A checks the connection and sends the test message.
	a.send(t, "main form button[type=submit]", ".panel-result")
	if text := a.mainText(t); !strings.Contains(text, "answers") {
		t.Fatalf("the connection check:\n%s", text)
	}
	a.shootStep(t, "wizard-check-done")
	a.do(t, "next step", chromedp.Click(chromedp.CSS(".wizard-next a")), chromedp.WaitVisible(chromedp.CSS("main form button[type=submit]")))
	a.shootStep(t, "wizard-test-message")
	a.send(t, "main form button[type=submit]", "#wizard-progress")
	a.waitText(t, "delivered.", 30*time.Second)
	a.shootStep(t, "wizard-test-message-delivered")

	// The message's page answers first: delivered, the signed receipt verified.
	a.do(t, "open the test message", chromedp.Click(chromedp.CSS("#wizard-progress a")), chromedp.WaitVisible(chromedp.CSS("main")))
	text := a.mainText(t)
	for _, want := range []string{"Delivered", "signed receipt verified", "MIC matched"} {
		if !strings.Contains(text, want) {
			t.Errorf("the test message's page lacks %q:\n%s", want, text)
		}
	}
	a.shootStep(t, "message")
	id := regexp.MustCompile(`/ui/messages/(\d+)$`).FindStringSubmatch(a.location(t))
	if id == nil {
		t.Fatalf("the test message's page is at %s", a.location(t))
	}
	ha.wantSignedReceipt(t, id[1])

	t.Logf("two instances made partners: %d form submissions, %d typed fields; screenshots in %s",
		count.submissions, count.typed, a.shots)
	if count.submissions > onboardingMaxSubmissions || count.typed > onboardingMaxTyped {
		t.Errorf("the onboarding took %d form submissions and %d typed fields, want at most %d and %d",
			count.submissions, count.typed, onboardingMaxSubmissions, onboardingMaxTyped)
	}
	a.checkClean(t, "instance A's onboarding")
	b.checkClean(t, "instance B's onboarding")
}

// onboardAdmin follows a new administrator's set-up link, enrols the authenticator and
// signs in with the next code, as the phone shows it.
func onboardAdmin(t *testing.T, w *walker, name string) {
	t.Helper()
	w.open(t, w.h.setupLink(name, persistence.RoleAdmin))
	secret := strings.TrimSpace(run(t, w.browser, "read the key", chromedp.Text(chromedp.CSS(".field-hint code.mono"))))
	if !keyRE.MatchString(secret) {
		t.Fatalf("the set-up page shows the key %q", secret)
	}
	w.shootStep(t, "setup")
	w.typeIn(t, "#password", testPassword)
	w.typeIn(t, "#password_confirm", testPassword)
	w.typeIn(t, "#code", totpCode(t, secret, time.Now()))
	w.send(t, "main form button[type=submit]", "a[href^='/ui/sign-in']")
	w.shootStep(t, "setup-done")

	w.do(t, "open sign-in", chromedp.Click(chromedp.CSS("a[href^='/ui/sign-in']")), chromedp.WaitVisible(chromedp.CSS("#password")))
	w.shootStep(t, "sign-in")
	if got := run(t, w.browser, "read the name", chromedp.Evaluate[string](`document.querySelector("#name").value`)); got != name {
		w.typeIn(t, "#name", name)
	}
	w.typeIn(t, "#password", testPassword)
	w.send(t, "main form button[type=submit]", "#code")
	w.shootStep(t, "sign-in-code")
	w.typeIn(t, "#code", signInCode(t, secret))
	w.send(t, "main form button[type=submit]", ".topbar")
	if loc := w.location(t); loc != "/ui/" {
		t.Fatalf("signed in at %s, want /ui/", loc)
	}
	w.shootStep(t, "dashboard")
}

// createIdentity follows the dashboard's first step to the organization and gives it its
// AS2 id in the local profile's form, whose certificate selects choose a new key pair.
func createIdentity(t *testing.T, w *walker, as2ID string) {
	t.Helper()
	w.do(t, "follow the first step", chromedp.Click(chromedp.CSS("#setup-checklist a[href='/ui/organizations/local']")),
		chromedp.WaitVisible(chromedp.CSS("a[href='/ui/organizations/local/panels/as2/edit']")))
	w.shootStep(t, "organization")
	w.do(t, "open the AS2 profile form", chromedp.Click(chromedp.CSS("a[href='/ui/organizations/local/panels/as2/edit']")),
		chromedp.WaitVisible(chromedp.CSS("#f-as2_id")))
	for _, field := range []string{"signing_certificate_id", "decryption_certificate_id"} {
		if got := run(t, w.browser, "read "+field, chromedp.Evaluate[string](`document.querySelector("#f-`+field+`").value`)); got != "generate" {
			t.Errorf("%s is %q, not the new key pair, in a gateway without a key", field, got)
		}
	}
	w.shootStep(t, "identity-form")
	w.typeIn(t, "#f-as2_id", as2ID)
	w.send(t, "main form button[type=submit]", ".flash-success")
	text := w.mainText(t)
	for _, want := range []string{"Our AS2 details", as2ID, "CN=" + as2ID, "Download the profile file"} {
		if !strings.Contains(text, want) {
			t.Errorf("the organization's page lacks %q:\n%s", want, text)
		}
	}
	w.shootStep(t, "our-as2-details")
}

// importPartner follows the dashboard's "Add a partner" into the wizard and imports the
// partner's profile file with the default preset; the wizard goes on to the connection
// check.
func importPartner(t *testing.T, w *walker, file, partner string) {
	t.Helper()
	w.open(t, "/ui/")
	w.do(t, "follow the second step", chromedp.Click(chromedp.CSS("#setup-checklist a[href='/ui/partners/new']")),
		chromedp.WaitVisible(chromedp.CSS("#f-profile_file")))
	w.shootStep(t, "wizard-partner")
	w.do(t, "choose the profile file", chromedp.SetUploadFiles(chromedp.CSS("#f-profile_file"), []string{file}))
	w.send(t, "main form button[type=submit]", "main form button[type=submit]")
	if loc := w.location(t); loc != "/ui/partners/"+partner+"/setup/check" {
		t.Fatalf("after the first step the browser is at %s:\n%s", loc, w.mainText(t))
	}
	w.shootStep(t, "wizard-check")
}
