package browsertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserGenerateAndPickKey generates a key pair in real Chromium and picks it in the
// organization's AS2 profile form from the list, by its subject: no id is typed.
// Screenshots of both pages are taken at 1280 and 375 px.
func TestBrowserGenerateAndPickKey(t *testing.T) {
	bin := chromium(t)
	h := start(t)
	b := newBrowser(t, bin, h)
	runSteps(t, b, []browserStep{
		{"first administrator set-up", stepSetup},
		{"sign in", stepSignIn},
		{"generate a key pair", stepGenerateKey},
		{"pick it in the local profile", stepPickKey},
	})
	t.Logf("screenshots in %s", b.shots)
}

// shootWidths photographs the current page at 1280 and 375 px, requiring no horizontal
// overflow at 375 px.
func (b *browser) shootWidths(t *testing.T, name string) {
	t.Helper()
	defer b.do(t, "restore the window", chromedp.EmulateViewport(1280, 900))
	for _, width := range []int64{1280, 375} {
		b.do(t, "resize", chromedp.EmulateViewport(width, 900))
		if width == 375 {
			if w := run(t, b, "measure", chromedp.Evaluate[int](`document.scrollingElement.scrollWidth`)); w > 375 {
				t.Errorf("%s is %d px wide at 375 px: %v", name, w, run(t, b, "find the overflow", chromedp.Evaluate[[]string](overflowing)))
			}
		}
		b.shoot(t, name, int(width))
	}
}

func stepGenerateKey(t *testing.T, b *browser) {
	b.open(t, "/ui/certificates")
	b.do(t, "open the generate form", chromedp.Click(chromedp.CSS("a[href='/ui/certificates/generate']")),
		chromedp.WaitVisible(chromedp.CSS("#common_name")))
	b.shootWidths(t, "certificate-generate")
	b.do(t, "fill in the subject",
		chromedp.SendKeys(chromedp.CSS("#common_name"), "WHARF-LOCAL"),
		chromedp.SendKeys(chromedp.CSS("#organization"), "Example Ltd"),
	)
	b.submit(t, "main form button[type=submit]", ".flash-success")
	text := b.mainText(t)
	for _, want := range []string{"CN=WHARF-LOCAL,O=Example Ltd", "Ours, with key", "Download DER (.cer)", "Certificate request for a CA"} {
		if !strings.Contains(text, want) {
			t.Errorf("the generated certificate's page lacks %q:\n%s", want, text)
		}
	}
	b.shootWidths(t, "certificate-generated")
}

func stepPickKey(t *testing.T, b *browser) {
	b.open(t, "/ui/organizations/local/panels/as2/edit")
	// The operator picks the certificate by what the list shows: its subject.
	pick := func(field string) {
		got := run(t, b, "pick "+field, chromedp.Evaluate[string](fmt.Sprintf(`(function () {
			var s = document.querySelector("#f-%s");
			for (var i = 0; i < s.options.length; i++) {
				if (s.options[i].text.indexOf("CN=WHARF-LOCAL") === 0) { s.selectedIndex = i; return s.options[i].text; }
			}
			return "";
		})()`, field)))
		if !strings.Contains(got, "Ours, with key") {
			t.Fatalf("%s offers no option for the generated key (%q)", field, got)
		}
	}
	pick("signing_certificate_id")
	pick("decryption_certificate_id")
	b.do(t, "name the organization", chromedp.SendKeys(chromedp.CSS("#f-as2_id"), "WHARF-LOCAL"))
	b.shootWidths(t, "local-profile-pick")
	b.submit(t, "main form button[type=submit]", ".flash-success")
	text := b.mainText(t)
	if !strings.Contains(text, "CN=WHARF-LOCAL,O=Example Ltd (until ") {
		t.Errorf("the organization's page does not name the picked certificate:\n%s", text)
	}
	b.shootWidths(t, "organization-with-key")
	b.open(t, "/ui/certificates")
	if text := b.mainText(t); !strings.Contains(text, "local") {
		t.Errorf("the certificate list does not show the organization using the key:\n%s", text)
	}
	b.shootWidths(t, "certificates")
}
