package ui

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/settings"
)

// TestTimesInDisplayZone: a page shows its times in the display_timezone setting's zone,
// in the one layout, with the UTC instant in the datetime attribute; a change of the
// setting applies to the next page.
func TestTimesInDisplayZone(t *testing.T) {
	pb := setupPages(t)
	pb.seedRouting(t)
	ctx := context.Background()
	acme, err := pb.store.GetParty(ctx, persistence.PartyPartner, "acme")
	if err != nil {
		t.Fatal(err)
	}
	shown := func(zone string) string {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		return `<time datetime="` + acme.CreatedAt.UTC().Format(time.RFC3339) + `">` + acme.CreatedAt.In(loc).Format(timeLayout) + `</time>`
	}
	if body := pb.get(t, "/ui/partners/acme", http.StatusOK); !strings.Contains(body, shown("UTC")) {
		t.Fatalf("default zone: page lacks %q\n%s", shown("UTC"), body)
	}
	for _, zone := range []string{"Asia/Kolkata", "America/St_Johns"} {
		wantRedirect(t, pb.post(t, "/ui/settings", map[string][]string{settings.DisplayTimezone: {zone}}), "/ui/settings")
		body := pb.get(t, "/ui/partners/acme", http.StatusOK)
		if !strings.Contains(body, shown(zone)) {
			t.Errorf("%s: page lacks %q\n%s", zone, shown(zone), body)
		}
		if strings.Contains(body, shown("UTC")) {
			t.Errorf("%s: page still shows the UTC time", zone)
		}
	}
}

// timeFormatting finds a time formatted in a template by other means than "when".
var timeFormatting = regexp.MustCompile(`<time\b|\.Format\b|\.UTC\b|\.Unix\b|\.In\b`)

// TestTemplatesFormatTimesOneWay fails when a template formats a time itself instead of
// through the "when" function, which keeps one layout and the display zone everywhere.
func TestTemplatesFormatTimesOneWay(t *testing.T) {
	eachTemplate(t, func(name, text string) {
		for i, line := range strings.Split(text, "\n") {
			if m := timeFormatting.FindString(line); m != "" {
				t.Errorf("%s:%d formats a time with %q; use {{when …}}", name, i+1, m)
			}
		}
	})
}

// eachTemplate calls fn with the name and text of every embedded template.
func eachTemplate(t *testing.T, fn func(name, text string)) {
	t.Helper()
	entries, err := templateFiles.ReadDir("templates")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw, err := templateFiles.ReadFile("templates/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		fn(e.Name(), string(raw))
	}
}

func TestWhen(t *testing.T) {
	z := newDisplayZone()
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	z.loc.Store(tokyo)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	want := `<time datetime="2026-03-01T09:00:00Z">2026-03-01 18:00:00 JST</time>`
	for _, tc := range []struct {
		in   any
		want string
	}{
		{at, want},
		{&at, want},
		{"2026-03-01T09:00:00Z", want},
		{(*time.Time)(nil), ""},
		{time.Time{}, ""},
		{"", ""},
		{"AS2 <id>", "AS2 &lt;id&gt;"},
	} {
		if got := string(z.when(tc.in)); got != tc.want {
			t.Errorf("when(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
