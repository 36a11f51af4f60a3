package browsertest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// remoteForm is a valid remote profile form: plain messages, so no certificate is needed.
func remoteForm(endpoint string) url.Values {
	return url.Values{
		"as2_id": {"PARTNER-B"}, "endpoint_url": {endpoint},
		"signing_algorithm": {"none"}, "encryption_algorithm": {"none"}, "key_transport": {"rsa-pkcs1v15"},
		"mdn_mode": {"none"}, "mdn_mic_algorithm": {"sha256"}, "mic_preference": {"requested"},
		"duplicate_filename": {"accept"}, "duplicate_filename_window_hours": {"24"},
		"duplicate_content": {"accept"}, "duplicate_content_window_hours": {"24"},
		"connect_timeout_seconds": {"5"}, "request_timeout_seconds": {"60"}, "receipt_timeout_minutes": {"60"},
		"max_message_size_mib": {"100"}, "compress": {"true"}, "compression_order": {"after_signing"}, "tls_trust": {"system"},
		"chunked": {"never"},
	}
}

// remoteJSON is the REST body of the same profile.
func remoteJSON(endpoint string) map[string]any {
	return map[string]any{
		"partner": "b", "as2_id": "PARTNER-B", "endpoint_url": endpoint,
		"signing_algorithm": "none", "encryption_algorithm": "none", "key_transport": "rsa-pkcs1v15",
		"mdn_mode": "none", "signed_mdn": false, "mdn_mic_algorithm": "sha256", "mic_preference": "requested",
		"require_signed": false, "require_encrypted": false,
		"duplicate_filename": "accept", "duplicate_filename_window_hours": 24,
		"duplicate_content": "accept", "duplicate_content_window_hours": 24,
		"connect_timeout_seconds": 5, "request_timeout_seconds": 60, "receipt_timeout_minutes": 60,
		"max_message_size_mib": 100, "compress": true, "compression_order": "after_signing",
		"chunked": "never",
	}
}

// fieldErrorRE finds the error shown under a panel form's field.
var fieldErrorRE = regexp.MustCompile(`<span class="field-error" id="f-([a-z0-9_]+)-error">`)

// TestPartnerAS2PanelRefusesLikeREST sends the same profiles through the UI's form and
// through REST: each is refused by both, naming the same fields (every invalid one, the
// case's among them), and nothing is stored.
func TestPartnerAS2PanelRefusesLikeREST(t *testing.T) {
	h := start(t)
	c, _ := h.signedIn(t, "alice")
	h.mustJSON("POST", "/api/v1/partners", map[string]any{"name": "b"}, nil)

	page := c.get(t, "/ui/partners/b")
	if page.status != http.StatusOK || !strings.Contains(page.body, `href="/ui/partners/b/panels/as2/edit"`) ||
		!strings.Contains(page.body, "No AS2 profile") {
		t.Fatalf("partner page without a profile = %d:\n%s", page.status, page.body)
	}
	// A new profile's form holds the defaults.
	if r := c.get(t, "/ui/partners/b/panels/as2/edit"); r.status != http.StatusOK ||
		!strings.Contains(r.body, `name="request_timeout_seconds" type="text" inputmode="numeric" autocomplete="off" spellcheck="false" value="120"`) {
		t.Fatalf("empty profile form = %d:\n%s", r.status, r.body)
	} else {
		// The hosts an async MDN may go to besides the endpoint's, which partners whose
		// product sends localhost need, and the compression order are in the form.
		for _, want := range []string{`name="async_mdn_hosts"`, `name="compression_order"`, `value="after_signing"`} {
			if !strings.Contains(r.body, want) {
				t.Errorf("profile form lacks %s", want)
			}
		}
	}

	for _, tc := range []struct {
		name  string
		field string
		form  func(url.Values)
		rest  func(map[string]any)
	}{
		{"no AS2 id", "as2_id", func(f url.Values) { f.Set("as2_id", "") }, func(m map[string]any) { m["as2_id"] = "" }},
		{"AS2 id with a quote", "as2_id", func(f url.Values) { f.Set("as2_id", `PART"NER`) }, func(m map[string]any) { m["as2_id"] = `PART"NER` }},
		{"endpoint not a URL", "endpoint_url", func(f url.Values) { f.Set("endpoint_url", "partner.example") },
			func(m map[string]any) { m["endpoint_url"] = "partner.example" }},
		{"connect timeout too long", "connect_timeout_seconds", func(f url.Values) { f.Set("connect_timeout_seconds", "100000") },
			func(m map[string]any) { m["connect_timeout_seconds"] = 100000 }},
		{"unknown signing algorithm", "signing_algorithm", func(f url.Values) { f.Set("signing_algorithm", "sha1") },
			func(m map[string]any) { m["signing_algorithm"] = "sha1" }},
		{"signature required without certificate", "partner_certificate_ids", func(f url.Values) { f.Set("require_signed", "true") },
			func(m map[string]any) { m["require_signed"] = true }},
		{"unknown compression order", "compression_order", func(f url.Values) { f.Set("compression_order", "never") },
			func(m map[string]any) { m["compression_order"] = "never" }},
		{"unknown certificate", "partner_certificate_ids", func(f url.Values) { f.Set("partner_certificate_ids", "424242") },
			func(m map[string]any) { m["partner_certificate_ids"] = []int64{424242} }},
		{"AES-GCM without the partner's confirmation", "gcm_confirmed", func(f url.Values) { f.Set("encryption_algorithm", "aes256-gcm") },
			func(m map[string]any) { m["encryption_algorithm"] = "aes256-gcm" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := remoteForm("https://partner.example/as2")
			tc.form(form)
			r := c.post(t, "/ui/partners/b/panels/as2", form)
			if r.status != http.StatusUnprocessableEntity && r.status != http.StatusConflict && r.status != http.StatusBadRequest {
				t.Fatalf("UI = %d, want a refusal\n%s", r.status, r.body)
			}
			var uiFields []string
			for _, m := range fieldErrorRE.FindAllStringSubmatch(r.body, -1) {
				uiFields = append(uiFields, m[1])
			}
			slices.Sort(uiFields)
			if !slices.Contains(uiFields, tc.field) {
				t.Errorf("UI shows errors at %v, want one at %s", uiFields, tc.field)
			}
			// The form is shown again as typed.
			if want := fmt.Sprintf(`value="%s"`, template(form.Get("as2_id"))); !strings.Contains(r.body, want) {
				t.Errorf("the refused form lost the typed AS2 id (%s)", want)
			}

			body := remoteJSON("https://partner.example/as2")
			tc.rest(body)
			b, _ := json.Marshal(body)
			code, data := h.api("POST", "/api/v1/as2/remote-profiles", "application/json", strings.NewReader(string(b)))
			var refusal struct {
				Error struct {
					Details map[string]string `json:"details"`
				} `json:"error"`
			}
			_ = json.Unmarshal(data, &refusal)
			if _, ok := refusal.Error.Details[tc.field]; code/100 != 4 || !ok {
				t.Errorf("REST = %d at fields %v, want a refusal at %s: %s", code, refusal.Error.Details, tc.field, data)
			}
			if restFields := slices.Sorted(maps.Keys(refusal.Error.Details)); !slices.Equal(restFields, uiFields) {
				t.Errorf("REST refuses %v, the UI %v", restFields, uiFields)
			}
		})
	}
	if code, _ := h.api("GET", "/api/v1/as2/remote-profiles/b", "", nil); code != http.StatusNotFound {
		t.Errorf("a refused form stored a profile: GET = %d", code)
	}
}

// template escapes like html/template does for the characters these tests type.
func template(s string) string {
	return strings.NewReplacer(`"`, "&#34;", "&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// TestPartnerAS2PanelTools creates the profile in the form, runs the connection check and
// sends a test message from the partner's page, edits and deletes the profile.
func TestPartnerAS2PanelTools(t *testing.T) {
	h := start(t)
	c, _ := h.signedIn(t, "alice")
	h.mustJSON("POST", "/api/v1/partners", map[string]any{"name": "b"}, nil)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	defer endpoint.Close()

	// The organization's local profile, from its page.
	if r := c.get(t, "/ui/organizations/local"); r.status != http.StatusOK || !strings.Contains(r.body, "No AS2 local profile") {
		t.Fatalf("organization page = %d", r.status)
	}
	r := c.post(t, "/ui/organizations/local/panels/as2", url.Values{"as2_id": {"WHARF-LOCAL"}, "signing_certificate_id": {"0"},
		"decryption_certificate_id": {"0"}, "max_message_size_mib": {"64"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/organizations/local" {
		t.Fatalf("save local profile = %d %q\n%s", r.status, r.header.Get("Location"), r.body)
	}
	if page := c.get(t, "/ui/organizations/local"); !strings.Contains(page.body, "WHARF-LOCAL") || !strings.Contains(page.body, "Saved.") {
		t.Errorf("organization page does not show the saved profile:\n%s", page.body)
	}

	r = c.post(t, "/ui/partners/b/panels/as2", remoteForm(endpoint.URL+"/as2"))
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/partners/b" {
		t.Fatalf("save remote profile = %d\n%s", r.status, r.body)
	}
	var stored map[string]any
	h.mustJSON("GET", "/api/v1/as2/remote-profiles/b", nil, &stored)
	if stored["as2_id"] != "PARTNER-B" || stored["max_message_size_mib"] != float64(100) || stored["signed_mdn"] != false ||
		stored["compression_order"] != "after_signing" || stored["chunked"] != "never" {
		t.Errorf("stored profile = %v", stored)
	}
	page := c.get(t, "/ui/partners/b")
	for _, want := range []string{"PARTNER-B", endpoint.URL + "/as2", "Check the connection", "Send a test message"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("partner page lacks %q", want)
		}
	}

	check := c.post(t, "/ui/partners/b/panels/as2/actions/check", nil)
	if check.status != http.StatusOK || !strings.Contains(check.body, "answers.") || !strings.Contains(check.body, "answered 405") {
		t.Errorf("connection check = %d:\n%s", check.status, check.body)
	}

	test := c.post(t, "/ui/partners/b/panels/as2/actions/test-message", nil)
	m := regexp.MustCompile(`<a href="/ui/messages/(\d+)">Follow message`).FindStringSubmatch(test.body)
	if test.status != http.StatusOK || m == nil {
		t.Fatalf("test message = %d:\n%s", test.status, test.body)
	}
	if r := c.get(t, "/ui/messages/"+m[1]); r.status != http.StatusOK || !strings.Contains(r.body, "wharf-test-") {
		t.Errorf("the test message's page = %d", r.status)
	}

	// An edit keeps what the form does not show (the retry policy) and what it does.
	h.mustJSON("PUT", "/api/v1/as2/remote-profiles/b", func() map[string]any {
		stored["retry"] = map[string]any{"strategy": "fixed", "base": "45s"}
		return stored
	}(), nil)
	edit := c.get(t, "/ui/partners/b/panels/as2/edit")
	if !strings.Contains(edit.body, `value="PARTNER-B"`) {
		t.Fatalf("edit form does not show the profile:\n%s", edit.body)
	}
	form := remoteForm(endpoint.URL + "/as2")
	form.Set("as2_id", "PARTNER-B2")
	if r := c.post(t, "/ui/partners/b/panels/as2", form); r.status != http.StatusSeeOther {
		t.Fatalf("edit = %d\n%s", r.status, r.body)
	}
	var edited struct {
		AS2ID string `json:"as2_id"`
		Retry struct {
			Strategy string `json:"strategy"`
		} `json:"retry"`
	}
	h.mustJSON("GET", "/api/v1/as2/remote-profiles/b", nil, &edited)
	if edited.AS2ID != "PARTNER-B2" || edited.Retry.Strategy != "fixed" {
		t.Errorf("edited profile = %+v", edited)
	}

	// The party cannot go while its profile names it; the profile goes from the panel.
	if r := c.post(t, "/ui/partners/b/delete", nil); r.status != http.StatusSeeOther || r.header.Get("Location") != "/ui/partners/b" {
		t.Errorf("delete party with a profile = %d %q", r.status, r.header.Get("Location"))
	}
	del := c.post(t, "/ui/partners/b/panels/as2/actions/delete", nil)
	if del.status != http.StatusOK || !strings.Contains(del.body, "The AS2 profile is deleted.") || !strings.Contains(del.body, "No AS2 profile") {
		t.Errorf("delete profile = %d:\n%s", del.status, del.body)
	}
	if code, _ := h.api("GET", "/api/v1/as2/remote-profiles/b", "", nil); code != http.StatusNotFound {
		t.Errorf("profile after delete: GET = %d", code)
	}
}

// TestPartyPanelMissing answers 404 for a panel of a missing party, an unknown module or
// an action the panel does not offer.
func TestPartyPanelMissing(t *testing.T) {
	h := start(t)
	c, _ := h.signedIn(t, "alice")
	h.mustJSON("POST", "/api/v1/partners", map[string]any{"name": "b"}, nil)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/ui/partners/nobody/panels/as2/edit"},
		{"GET", "/ui/partners/b/panels/nosuch/edit"},
		{"POST", "/ui/partners/nobody/panels/as2"},
		{"POST", "/ui/partners/b/panels/as2/actions/check"}, // no profile yet: nothing offered
		{"POST", "/ui/organizations/local/panels/as2/actions/test-message"},
	} {
		var r response
		if tc.method == "GET" {
			r = c.get(t, tc.path)
		} else {
			r = c.post(t, tc.path, nil)
		}
		if r.status != http.StatusNotFound {
			t.Errorf("%s %s = %d, want 404", tc.method, tc.path, r.status)
		}
	}
}
