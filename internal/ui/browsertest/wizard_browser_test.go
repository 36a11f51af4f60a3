package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// shootBoth saves the page at 1280 and 375 px, and requires no horizontal overflow at
// 375 px.
func (b *browser) shootBoth(t *testing.T, name string) {
	t.Helper()
	b.shoot(t, name, 1280)
	b.do(t, "narrow", chromedp.EmulateViewport(375, 900))
	if w := run(t, b, "measure", chromedp.Evaluate[int](`document.scrollingElement.scrollWidth`)); w > 375 {
		t.Errorf("%s is %d px wide at 375 px: %v", name, w, run(t, b, "find the overflow", chromedp.Evaluate[[]string](overflowing)))
	}
	b.shoot(t, name, 375)
	b.do(t, "widen", chromedp.EmulateViewport(1280, 900))
}

// TestBrowserPartnerWizard walks the partner wizard in headless Chromium: the
// organization's "Our AS2 details", then on the new-partner page the partner's profile
// file is chosen, the default preset kept, the connection checked and a test message
// sent, whose progress the page follows until it is delivered; each step is photographed
// at 1280 and 375 px.
func TestBrowserPartnerWizard(t *testing.T) {
	bin := chromium(t)
	a, peer := start(t), start(t)
	a.identify("WHARF-A", "gateway-a")
	peer.identify("WHARF-B", "gateway-b")
	// The peer knows A from A's file; A learns the peer's from its file, in the browser.
	var fileA map[string]any
	a.mustJSON("GET", "/api/v1/as2/local-profiles/local/partner-profile", nil, &fileA)
	peer.mustJSON("POST", "/api/v1/as2/partners", map[string]any{"profile_file": fileA}, nil)
	raw := peer.mustJSON("GET", "/api/v1/as2/local-profiles/local/partner-profile", nil, nil)
	profileFile := filepath.Join(t.TempDir(), "wharf-b-as2-profile.json")
	if err := os.WriteFile(profileFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, bin, a)
	stepSetup(t, b)
	stepSignIn(t, b)

	b.open(t, "/ui/organizations/local")
	if text := b.mainText(t); !strings.Contains(text, "Our AS2 details") || !strings.Contains(text, "Download the profile file") {
		t.Fatalf("the organization page:\n%s", text)
	}
	b.shootBoth(t, "our-as2-details")

	b.open(t, "/ui/partners/new")
	b.shootBoth(t, "wizard-1-partner")
	b.do(t, "choose the profile file", chromedp.SetUploadFiles(chromedp.CSS("#f-profile_file"), []string{profileFile}))
	b.submit(t, "main form button[type=submit]", ".wizard-next")
	// The first page's preset (the default, kept) is applied: the wizard goes on to the
	// connection check, and the preset step stays in the list for a change of mind.
	if loc := b.location(t); loc != "/ui/partners/wharf-b/setup/check" {
		t.Fatalf("after the first step the browser is at %s:\n%s", loc, b.mainText(t))
	}
	b.do(t, "back to the preset", chromedp.Click(chromedp.CSS(".wizard-steps a[href$='/setup/security']")),
		chromedp.WaitVisible(chromedp.CSS("#p-openas2-sets summary")))
	b.do(t, "open what OpenAS2 sets", chromedp.Click(chromedp.CSS("#p-openas2-sets summary")))
	b.shootBoth(t, "wizard-2-security")
	b.submit(t, "main form button[type=submit]", "main form button[type=submit]")
	if loc := b.location(t); loc != "/ui/partners/wharf-b/setup/check" {
		t.Fatalf("after the preset the browser is at %s", loc)
	}
	b.shootBoth(t, "wizard-3-check")
	b.submit(t, "main form button[type=submit]", ".panel-result")
	if text := b.mainText(t); !strings.Contains(text, "answers") {
		t.Fatalf("the connection check:\n%s", text)
	}
	b.shootBoth(t, "wizard-3-check-done")
	b.do(t, "next step", chromedp.Click(chromedp.CSS(".wizard-next a")), chromedp.WaitVisible(chromedp.CSS("main form button[type=submit]")))
	b.submit(t, "main form button[type=submit]", "#wizard-progress")
	b.waitText(t, "delivered.", 30*time.Second)
	b.shootBoth(t, "wizard-4-test-message")
	b.do(t, "finish", chromedp.Click(chromedp.CSS(".wizard-next a")), chromedp.WaitVisible(chromedp.CSS("main")))
	if loc := b.location(t); loc != "/ui/partners/wharf-b" {
		t.Errorf("the wizard ends at %s", loc)
	}
	b.open(t, "/ui/partners/wharf-b/panels/as2/edit")
	b.shootBoth(t, "partner-as2-form")

	// The pages of the flow in the other theme.
	b.setTheme(t, map[string]string{"light": "dark", "dark": "light"}[b.theme(t)])
	for name, path := range map[string]string{"our-as2-details": "/ui/organizations/local", "wizard-1-partner": "/ui/partners/new",
		"wizard-2-security": "/ui/partners/wharf-b/setup/security", "partner-as2-form": "/ui/partners/wharf-b/panels/as2/edit"} {
		b.open(t, path)
		b.shootBoth(t, name)
	}
	b.checkClean(t, "the partner wizard")
	t.Logf("screenshots in %s", b.shots)
}
