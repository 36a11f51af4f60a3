package ui

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/stdwebhook"
)

var callbackSecretRE = regexp.MustCompile(`id="callback-secret">(whsec_[^<]+)</code>`)

// TestCallbackSecretsPage generates a target's callback secret (shown once, stored
// sealed, verifying a signed request), lists it by id without its value, revokes it, and
// has no such page for a source instance; an operator sees the list only.
func TestCallbackSecretsPage(t *testing.T) {
	ab := setupAccounts(t, nil)
	ctx := context.Background()
	ab.posterAndPoller(t)
	base := "/ui/plugins/http-poster/erp_poster"
	if page := ab.get(t, base, http.StatusOK); !strings.Contains(page, `href="`+base+`/callback-secrets"`) {
		t.Fatalf("the instance page does not link its callback secrets:\n%s", page)
	}
	if page := ab.get(t, "/ui/plugins/file-poller/inbox_poller", http.StatusOK); strings.Contains(page, "callback-secrets") {
		t.Fatalf("a source's page links callback secrets")
	}
	ab.get(t, "/ui/plugins/file-poller/inbox_poller/callback-secrets", http.StatusNotFound)
	if body := ab.get(t, base+"/callback-secrets", http.StatusOK); !strings.Contains(body, "No secrets: callbacks to this target are refused.") {
		t.Fatalf("empty list:\n%s", body)
	}

	r := ab.post(t, base+"/callback-secrets", nil)
	if r.status != http.StatusOK {
		t.Fatalf("generate = %d\n%s", r.status, r.body)
	}
	shown := match(t, callbackSecretRE, r.body)
	secret := html.UnescapeString(shown)
	from := len(ab.c.seen)
	secs, err := ab.store.ListCallbackSecrets(ctx, "erp_poster")
	if err != nil || len(secs) != 1 || strings.Contains(string(secs[0].Sealed), secret) {
		t.Fatalf("stored secrets = %+v, %v", secs, err)
	}
	// What the page showed is what the verifier opens from the store.
	plain, err := ab.ui.sealer.Open(secs[0].Sealed)
	if err != nil || string(plain) != secret {
		t.Fatalf("sealed secret opens to %q, %v", plain, err)
	}
	key, _ := stdwebhook.Key(secret)
	h := http.Header{}
	stdwebhook.Sign(h, key, "msg_1", time.Now(), []byte("{}"))
	if err := stdwebhook.Verify(h, []string{string(plain)}, []byte("{}"), time.Now()); err != nil {
		t.Fatalf("a request signed with the shown secret: %v", err)
	}

	list := ab.get(t, base+"/callback-secrets", http.StatusOK)
	if !strings.Contains(list, `data-confirm="Revoke secret 1?`) || !strings.Contains(list, "active</span>") {
		t.Errorf("list after generating:\n%s", list)
	}
	op, csrf, _ := ab.signedIn(t, "olga", persistence.RoleOperator)
	if r := op.get(t, base+"/callback-secrets"); r.status != http.StatusOK || strings.Contains(r.body, "/revoke") {
		t.Errorf("operator's list = %d\n%s", r.status, r.body)
	}
	for _, path := range []string{base + "/callback-secrets", base + "/callback-secrets/1/revoke"} {
		if r := op.post(t, path, url.Values{"csrf_token": {csrf}}); r.status != http.StatusForbidden {
			t.Errorf("operator POST %s = %d, want 403", path, r.status)
		}
	}
	wantRedirect(t, ab.post(t, base+"/callback-secrets/1/revoke", nil), base+"/callback-secrets")
	if body := ab.get(t, base+"/callback-secrets", http.StatusOK); !strings.Contains(body, "Secret revoked") || !strings.Contains(body, "revoked</span>") {
		t.Errorf("list after revoking:\n%s", body)
	}
	if r := ab.post(t, base+"/callback-secrets/99/revoke", nil); r.status != http.StatusNotFound {
		t.Errorf("revoke unknown = %d, want 404", r.status)
	}
	noneContains(t, ab.c, from, "generation", secret, shown)
}

// posterAndPoller adds a target instance (erp_poster) and a source (inbox_poller).
func (ab *accountsBundle) posterAndPoller(t *testing.T) {
	t.Helper()
	for _, c := range []persistence.PluginConfig{
		{Name: "erp_poster", Type: persistence.PluginHTTPPoster, Enabled: true, Config: []byte(`{}`)},
		{Name: "inbox_poller", Type: persistence.PluginFilePoller, Enabled: true, Config: []byte(`{}`)},
	} {
		if _, err := ab.store.CreatePluginConfig(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
}
