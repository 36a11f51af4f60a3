package ui

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"wharf/internal/certs"
	"wharf/internal/certs/certstest"
	"wharf/internal/persistence"
	"wharf/internal/secret"
)

// newCertForUI is a certificate of ours with its key sealed, as a record to store.
func newCertForUI(t *testing.T) []persistence.Certificate {
	t.Helper()
	k, err := secret.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	box, err := secret.New(k)
	if err != nil {
		t.Fatal(err)
	}
	key := certstest.ECKey(t)
	leaf := certstest.ValidLeaf(t, certstest.CA(t, "Our CA"), "us.example", key)
	recs, err := certs.Records([]certs.Parsed{{Cert: leaf.Cert, Key: key}}, "ours", box)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestDashboardChecklist(t *testing.T) {
	b := setupMessages(t) // local, acme and beta exist; no identity, nothing sent
	c := b.signedIn(t)
	steps := regexp.MustCompile(`<li class="setup-(done|open)"><span[^>]*>[^<]*</span> <a href="([^"]+)">`)
	read := func() []string {
		t.Helper()
		body := c.get(t, "/ui/").body
		var out []string
		for _, m := range steps.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1]+" "+m[2])
		}
		return out
	}
	want := []string{"open /ui/organizations/local", "done /ui/partners/new", "open /ui/partners/acme"}
	if got := read(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checklist = %q, want %q", got, want)
	}
	b.sent(t, acmeParty, nil)
	want[2] = "done /ui/partners/acme"
	if got := read(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after a message to acme, checklist = %q, want %q", got, want)
	}
	// With our identity too, every step is done and the checklist goes.
	f := newCertForUI(t)
	created, err := b.store.CreateCertificates(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.store.SetCertificateUses(context.Background(), "as2_local_profile", string(localParty), []int64{created[0].ID}); err != nil {
		t.Fatal(err)
	}
	if got := read(); len(got) != 0 {
		t.Errorf("checklist after every step = %q", got)
	}
}

func TestDashboardProblemsByPartner(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	for range 2 {
		b.sent(t, betaParty, func(m *persistence.Message) {
			m.From, m.To, m.Refusal = betaParty, localParty, persistence.RefusalRefused
		})
	}
	b.sent(t, acmeParty, func(m *persistence.Message) {
		m.From, m.To, m.Refusal = acmeParty, localParty, persistence.RefusalRefused
	})
	body := c.get(t, "/ui/").body
	list := regexp.MustCompile(`(?s)id="problems-by-partner">.*?</ul>`).FindString(body)
	if !regexp.MustCompile(`(?s)href="/ui/partners/beta">beta</a> <span class="badge badge-danger">2</span>.*href="/ui/partners/acme">acme</a> <span class="badge badge-danger">1</span>`).MatchString(list) {
		t.Errorf("problems by partner = %s", list)
	}
}
