package notification

import (
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/alert"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// renderCases are the alerts every format is held to: an ordinary one, and one whose
// texts carry what each receiver interprets (markup, mentions, HTML, line breaks).
var renderCases = map[string]alert.Alert{
	"message_failed": {
		ID: "0123456789abcdef0123456789abcdef", Time: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		Severity: alert.SeverityCritical, Code: alert.MessageFailed,
		Subject: alert.Subject{Kind: "message", ID: "42", Name: "invoice-7.xml"},
		Summary: "Message 42 from acme to local failed on as2_sender_default",
		Details: []alert.Detail{{Label: "From", Value: "acme"}, {Label: "To", Value: "local"}, {Label: "Target", Value: "as2_sender_default"}, {Label: "Reason", Value: "HTTP 403 Forbidden"}},
		Link:    "/ui/messages/42",
	},
	"hostile": {
		ID: "fedcba9876543210fedcba9876543210", Time: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		Severity: alert.SeverityWarning, Code: alert.CertificateExpiring,
		Subject: alert.Subject{Kind: "certificate", ID: "3", Name: "<b>*bold*</b> & _x_ <!channel> @everyone"},
		Summary: "Ünïcode <script>alert(1)</script> [link](http://x) `code` ~s~ | # > \\",
		Details: []alert.Detail{{Label: "<Label>", Value: "<@U123> & <https://evil|click>"}},
	},
}

func TestRenderGolden(t *testing.T) {
	for _, f := range AllFormats {
		for _, name := range slices.Sorted(maps.Keys(renderCases)) {
			a := renderCases[name]
			if err := a.Normalize(time.Now()); err != nil {
				t.Fatal(err)
			}
			t.Run(string(f)+"/"+name, func(t *testing.T) {
				r, err := Render(f, a, "https://wharf.example")
				if err != nil {
					t.Fatal(err)
				}
				if r.ContentType != "text/plain; charset=utf-8" && !json.Valid(r.Body) {
					t.Fatalf("body is not JSON:\n%s", r.Body)
				}
				var b strings.Builder
				b.WriteString("Content-Type: " + r.ContentType + "\n")
				for _, k := range slices.Sorted(maps.Keys(r.Header)) {
					b.WriteString(k + ": " + r.Header.Get(k) + "\n")
				}
				b.WriteString("\n")
				b.Write(r.Body)
				got := b.String()
				path := filepath.Join("testdata", "render", string(f)+"_"+name+".golden")
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Fatalf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
				}
				again, _ := Render(f, a, "https://wharf.example")
				if string(again.Body) != string(r.Body) {
					t.Fatal("rendering is not deterministic")
				}
			})
		}
	}
}

// TestRenderEscapes checks that what a receiver interprets never reaches it raw.
func TestRenderEscapes(t *testing.T) {
	a := renderCases["hostile"]
	for _, tc := range []struct {
		f      Format
		banned []string
	}{
		{FormatSlack, []string{"<!channel>", "<@U123>", "<https://evil|click>", "<b>"}},
		{FormatDiscord, []string{"*bold*", "[link](http://x)", "`code`"}},
		{FormatTeams, []string{"*bold*", "[link](http://x)"}},
		{FormatGoogleChat, []string{"<script>", "<b>", "<@U123>"}},
	} {
		r, err := Render(tc.f, a, "https://wharf.example")
		if err != nil {
			t.Fatal(err)
		}
		// Decode the JSON so its own escaping (\u003c) does not hide a raw character.
		var v any
		if err := json.Unmarshal(r.Body, &v); err != nil {
			t.Fatal(err)
		}
		text, _ := json.Marshal(v)
		plain := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(text))
		for _, b := range tc.banned {
			if strings.Contains(plain, b) {
				t.Errorf("%s: %q reaches the receiver unescaped", tc.f, b)
			}
		}
	}
	// The generic format is data: its receiver escapes for its own page, and the JSON
	// itself carries no raw markup characters that a careless one might paste into HTML.
	if r, _ := Render(FormatGeneric, a, ""); strings.ContainsAny(string(r.Body), "<>&") {
		t.Error("generic: raw markup characters in the JSON")
	}
	if d := discord(a, ""); d["allowed_mentions"] == nil {
		t.Error("discord: mentions are not disabled")
	}
	r := ntfy(a, "")
	if strings.ContainsAny(r.Header.Get("Title"), "\r\n") || !strings.HasPrefix(r.Header.Get("Title"), "=?UTF-8?") && strings.ContainsFunc(r.Header.Get("Title"), func(c rune) bool { return c > 0x7e }) {
		t.Errorf("ntfy title header not safe: %q", r.Header.Get("Title"))
	}
}
