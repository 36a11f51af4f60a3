package ui

import (
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"wharf/internal/erasure"
	"wharf/internal/module"
	"wharf/internal/persistence/db"
	"wharf/internal/ui/session"
)

// formsBundle is a signed-in administrator of a UI with every page group's dependencies,
// a partner with a module panel, and the routing records of seedRouting.
type formsBundle struct {
	*accountsBundle
}

func setupForms(t *testing.T) *formsBundle {
	t.Helper()
	withIngest, blobs := ingestDeps(t)
	ab := setupAccounts(t, func(d *Deps) {
		withIngest(d)
		d.Erasure = erasure.New(d.Store.(*db.Store), blobs, nil)
		d.PartyPanels = []module.PartyPanels{&fakePanels{orgs: true}}
		d.Services = &fakeServices{store: d.Store}
		withOIDC(d)
		d.EventWebhooks = newFakeEventWebhooks()
	})
	ab.seedRouting(t)
	return &formsBundle{ab}
}

// multipart posts fields as multipart/form-data, with the CSRF token and without a file,
// as a browser sends a form whose file input is left empty.
func (fb *formsBundle) multipart(t *testing.T, path string, form url.Values) response {
	t.Helper()
	form.Set(session.CSRFField, fb.csrf)
	return postMultipart(t, fb.c, fb.srv.URL+path, form, "", []byte{})
}

// badField is an input a case fills wrongly: its element id and, unless it is a secret
// the form never shows back, the value that must survive the refusal.
type badField struct {
	id, value string
	secret    bool
}

// formCase submits one form with invalid fields. prepare, when set, returns values the
// form needs from its page (such as a sealed state).
type formCase struct {
	path      string
	form      url.Values
	multipart bool
	prepare   func(t *testing.T, fb *formsBundle) url.Values
	bad       []badField
	// kept are valid typed values that must survive too, by element id.
	kept []badField
}

// formCases are the forms of the UI by their route pattern. A route whose request carries
// nothing typed (a button, a confirmation, a choice among fixed options) has an entry in
// actionRoutes instead, saying so.
func formCases() map[string][]formCase {
	long := strings.Repeat("x", 201)
	return map[string][]formCase{
		"POST /ui/account/password": {{
			path: "/ui/account/password",
			form: url.Values{"current_password": {"not my password"}, "password": {"short"}, "password_confirm": {"other"}},
			bad:  []badField{{id: "current_password", secret: true}, {id: "password", secret: true}, {id: "password_confirm", secret: true}},
		}},
		"POST /ui/account/authenticator": {{
			path: "/ui/account/authenticator",
			prepare: func(t *testing.T, fb *formsBundle) url.Values {
				body := fb.get(t, "/ui/account/authenticator", http.StatusOK)
				return url.Values{"state": {match(t, stateRE, body)}}
			},
			form: url.Values{"current_password": {"not my password"}, "code": {"000000"}},
			bad:  []badField{{id: "current_password", secret: true}, {id: "code", value: "000000"}},
		}},
		"POST /ui/account/recovery-codes": {{
			// The form has one field.
			path: "/ui/account/recovery-codes",
			form: url.Values{"current_password": {"not my password"}},
			bad:  []badField{{id: "recovery_current_password", secret: true}},
		}},
		"POST /ui/certificates": {{
			path: "/ui/certificates", multipart: true,
			form: url.Values{"password": {strings.Repeat("p", maxCertField+1)}, "description": {"ACME signing 2026"}},
			bad:  []badField{{id: "file", secret: true}, {id: "password", secret: true}},
			kept: []badField{{id: "description", value: "ACME signing 2026"}},
		}},
		"POST /ui/partners/{name}/retention": {{
			path: "/ui/partners/acme/retention",
			form: url.Values{"payload_retention_days": {"ninety"}, "history_retention_days": {"-1"}},
			bad:  []badField{{id: "payload_retention_days", value: "ninety"}, {id: "history_retention_days", value: "-1"}},
		}},
		"POST /ui/organizations/{name}/retention": {{
			path: "/ui/organizations/local/retention",
			form: url.Values{"payload_retention_days": {"36501"}, "history_retention_days": {"30"}},
			bad:  []badField{{id: "payload_retention_days", value: "36501"}},
			kept: []badField{{id: "history_retention_days", value: "30"}},
		}},
		"POST /ui/identity-providers": {{
			path: "/ui/identity-providers",
			form: url.Values{"name": {"Corp SSO"}, "display_name": {"Corp"}, "issuer_url": {"not a url"}, "client_id": {"wharf"}},
			bad:  []badField{{id: "name", value: "Corp SSO"}, {id: "issuer_url", value: "not a url"}},
			kept: []badField{{id: "display_name", value: "Corp"}, {id: "client_id", value: "wharf"}},
		}},
		"POST /ui/identity-providers/{name}": {{
			path: "/ui/identity-providers/corp",
			prepare: func(t *testing.T, fb *formsBundle) url.Values {
				wantRedirect(t, fb.post(t, "/ui/identity-providers", url.Values{"name": {"corp"}, "issuer_url": {"https://login.example.com"},
					"client_id": {"wharf"}, "enabled": {"true"}}), "/ui/identity-providers/corp")
				return nil
			},
			form: url.Values{"issuer_url": {"ftp://login.example.com"}, "client_id": {""}, "display_name": {"Corp SSO"}},
			bad:  []badField{{id: "issuer_url", value: "ftp://login.example.com"}, {id: "client_id", value: ""}},
			kept: []badField{{id: "display_name", value: "Corp SSO"}},
		}},
		"POST /ui/event-webhooks": {{
			path: "/ui/event-webhooks",
			form: url.Values{"name": {"ERP Events"}, "url": {"not a url"}, "events": {"message.*"}, "party": {"acme"}, "disable_after": {"24h"}},
			bad:  []badField{{id: "name", value: "ERP Events"}, {id: "url", value: "not a url"}},
			kept: []badField{{id: "events", value: "message.*"}, {id: "party", value: "acme"}, {id: "disable_after", value: "24h"}},
		}},
		"POST /ui/organizations": {{
			path: "/ui/organizations",
			form: url.Values{"name": {"Our Org"}, "display_name": {long}},
			bad:  []badField{{id: "name", value: "Our Org"}, {id: "display_name", value: long}},
		}},
		"POST /ui/organizations/{name}": {{
			// The name cannot change: the form has one field.
			path: "/ui/organizations/local",
			form: url.Values{"display_name": {long}},
			bad:  []badField{{id: "display_name", value: long}},
		}},
		"POST /ui/partners": {{
			path: "/ui/partners",
			form: url.Values{"name": {"ACME Corp"}, "display_name": {long}},
			bad:  []badField{{id: "name", value: "ACME Corp"}, {id: "display_name", value: long}},
		}},
		"POST /ui/partners/{name}": {{
			path: "/ui/partners/acme",
			form: url.Values{"display_name": {long}},
			bad:  []badField{{id: "display_name", value: long}},
		}},
		"POST /ui/partners/{name}/pause": {{
			// The form has one field.
			path: "/ui/partners/acme/pause",
			form: url.Values{"reason": {strings.Repeat("x", 501)}},
			bad:  []badField{{id: "reason", value: strings.Repeat("x", 501)}},
		}},
		"POST /ui/partners/{name}/panels/{module}": {{
			// The fake module's panel refuses code and a field it does not show.
			path: "/ui/partners/acme/panels/fake",
			form: url.Values{"code": {""}},
			bad:  []badField{{id: "f-code", value: ""}},
		}},
		"POST /ui/organizations/{name}/panels/{module}": {{
			path: "/ui/organizations/local/panels/fake",
			form: url.Values{"code": {""}},
			bad:  []badField{{id: "f-code", value: ""}},
		}},
		"POST /ui/plugins/{type}": pluginCases(),
		"POST /ui/plugins/{type}/{name}": {{path: "/ui/plugins/file-writer/inbox", form: url.Values{"pattern": {"{nope}"}, "file_mode": {"rwx"}, "enabled": {"true"}},
			bad: []badField{{id: "cfg-pattern", value: "{nope}"}, {id: "cfg-file_mode", value: "rwx"}}}},
		"POST /ui/certificates/generate": {{
			path: "/ui/certificates/generate",
			form: url.Values{"algorithm": {"rsa-3072"}, "common_name": {""}, "organization": {"ACME"}, "country": {"Germany"}, "validity_days": {"730"}},
			bad:  []badField{{id: "common_name", value: ""}, {id: "country", value: "Germany"}},
			kept: []badField{{id: "organization", value: "ACME"}, {id: "validity_days", value: "730"}},
		}},
		"POST /ui/routes/{id}": {{
			path: "/ui/routes/1",
			prepare: func(t *testing.T, fb *formsBundle) url.Values {
				r := fb.post(t, "/ui/routes", url.Values{"source": {"outbox"}, "from": {"*"}, "to": {"*"}, "target": {"inbox"}})
				if r.status != http.StatusSeeOther {
					t.Fatalf("create the route to edit: %d\n%s", r.status, r.body)
				}
				return nil
			},
			form: url.Values{"source": {""}, "from": {"Not A Party"}, "to": {"*"}, "target": {"inbox"}},
			bad:  []badField{{id: "source", value: ""}, {id: "from", value: "Not A Party"}},
			kept: []badField{{id: "to", value: "*"}, {id: "target", value: "inbox"}},
		}},
		"POST /ui/erasures": {{
			path: "/ui/erasures",
			form: url.Values{"party": {"Not A Party"}, "from": {"31.01.2026"}, "to": {"yesterday"}},
			bad:  []badField{{id: "erasure_party", value: ""}, {id: "erasure_from", value: "31.01.2026"}, {id: "erasure_to", value: "yesterday"}},
		}},
		"POST /ui/routes": {{
			path: "/ui/routes",
			form: url.Values{"source": {""}, "from": {"Not A Party"}, "to": {"*"}, "target": {"inbox"}},
			bad:  []badField{{id: "source", value: ""}, {id: "from", value: "Not A Party"}},
			kept: []badField{{id: "to", value: "*"}, {id: "target", value: "inbox"}},
		}},
		"POST /ui/send": {{
			path: "/ui/send", multipart: true,
			form: url.Values{"from": {"Bad From"}, "to": {"nobody"}, "target": {"inbox"}, "file_name": {"order.edi"}},
			bad:  []badField{{id: "from", value: "Bad From"}, {id: "to", value: "nobody"}, {id: "file", secret: true}},
			kept: []badField{{id: "target", value: "inbox"}, {id: "file_name", value: "order.edi"}},
		}},
		"POST /ui/settings": {{
			path: "/ui/settings",
			form: url.Values{"max_dispatches": {"many"}, "display_timezone": {"Mars/Olympus"}, "sweep_interval": {"7s"}},
			bad:  []badField{{id: "max_dispatches", value: "many"}, {id: "display_timezone", value: "Mars/Olympus"}},
			kept: []badField{{id: "sweep_interval", value: "7s"}},
		}},
		"POST /ui/tokens": {{
			// The form has one field.
			path: "/ui/tokens",
			form: url.Values{"name": {"Nightly Export"}},
			bad:  []badField{{id: "token_name", value: "Nightly Export"}},
		}},
		"POST /ui/users": {{
			path: "/ui/users",
			form: url.Values{"name": {"Bob Smith"}, "display_name": {"Bob"}, "role": {"boss"}},
			bad:  []badField{{id: "name", value: "Bob Smith"}, {id: "role", value: ""}},
			kept: []badField{{id: "display_name", value: "Bob"}},
		}},
	}
}

// pluginCases fill a new instance of every plugin type of this build wrongly: the name
// and every integer and duration field, so an error beside the wrong field shows.
func pluginCases() []formCase {
	var out []formCase
	for _, p := range module.Plugins() {
		specs, err := module.Describe(p.Type)
		if err != nil {
			panic(err)
		}
		c := formCase{path: "/ui/plugins/" + string(p.Type),
			form: url.Values{"name": {"Bad Name"}, "enabled": {"true"}},
			bad:  []badField{{id: "name", value: "Bad Name"}}}
		for _, f := range specs {
			if f.Kind == module.KindInteger || f.Kind == module.KindDuration {
				typed := "soon"
				if f.Kind == module.KindInteger {
					typed = "3.5 units"
				}
				c.form.Set(f.Name, typed)
				c.bad = append(c.bad, badField{id: "cfg-" + strings.ReplaceAll(f.Name, ".", "-"), value: typed})
			}
		}
		out = append(out, c)
	}
	return out
}

// actionRoutes take no typed input, each for the reason given.
var actionRoutes = map[string]string{
	"POST /ui/account/sign-out-everywhere":                           "a button",
	"POST /ui/audit/verify":                                          "a button",
	"POST /ui/certificates/{id}/delete":                              "a confirmed button",
	"POST /ui/identity-providers/{name}/delete":                      "a confirmed button",
	"POST /ui/messages/{id}/redispatch":                              "a confirmed button",
	"POST /ui/messages/{id}/erase":                                   "a confirmed button",
	"POST /ui/messages/{id}/deliveries/{delivery_id}/redeliver":      "a confirmation with a choice among fixed modes",
	"POST /ui/notifications/{instance}/test":                         "a button",
	"POST /ui/event-webhooks/{name}/test":                            "a button",
	"POST /ui/event-webhooks/{name}/enable":                          "a button",
	"POST /ui/event-webhooks/{name}/secret":                          "a confirmed button",
	"POST /ui/organizations/{name}/delete":                           "a confirmed button",
	"POST /ui/partners/{name}/delete":                                "a confirmed button",
	"POST /ui/partners/{name}/resume":                                "a button",
	"POST /ui/partners/{name}/panels/{module}/actions/{action}":      "a module's action button",
	"POST /ui/organizations/{name}/panels/{module}/actions/{action}": "a module's action button",
	"POST /ui/plugins/{type}/{name}/delete":                          "a confirmed button",
	"POST /ui/routes/{id}/delete":                                    "a confirmed button",
	"POST /ui/dead-letters/{action}":                                 "a confirmed bulk action on the deliveries chosen in the list",
	"POST /ui/settings/storage/test":                                 "a button that tests the saved storage settings",
	"POST /ui/sessions/deliveries/{id}/{action}":                     "a confirmed button",
	"POST /ui/partners/new":                                          "the module's guided flow; browsertest.TestPartnerWizardRefusals submits it with every field wrong",
	"POST /ui/partners/{name}/setup/security":                        "a choice among fixed presets",
	"POST /ui/partners/{name}/setup/{tool}":                          "a button that runs a module tool",
	"POST /ui/services/{type}/{name}/start":                          "a button",
	"POST /ui/services/{type}/{name}/stop":                           "a button",
	"POST /ui/services/{type}/{name}/restart":                        "a button",
	"POST /ui/tokens/{name}/revoke":                                  "a confirmed button",
	"POST /ui/users/{name}/role":                                     "a choice among fixed roles",
	"POST /ui/users/{name}/reset":                                    "a confirmed button",
	"POST /ui/users/{name}/disable":                                  "a confirmed button",
	"POST /ui/users/{name}/enable":                                   "a button",
	"POST /ui/users/{name}/sign-out":                                 "a confirmed button",
	"POST /ui/users/{name}/delete":                                   "a confirmed button",

	// A target instance's status callback secrets.
	"POST /ui/plugins/{type}/{name}/callback-secrets":             "a button that generates a secret",
	"POST /ui/plugins/{type}/{name}/callback-secrets/{id}/revoke": "a confirmed button",
}

// TestEveryFormTellsEverythingAtOnce submits every form of the UI with invalid fields and
// checks that each error stands beside its own field (marked invalid and described by the
// error), that the summary above the form links to it, and that what was typed survives.
// A POST route without a case here fails the test.
func TestEveryFormTellsEverythingAtOnce(t *testing.T) {
	cases := formCases()
	probe := setupForms(t)
	for _, rt := range probe.ui.pageRoutes() {
		if strings.HasPrefix(rt.pattern, "GET ") {
			continue
		}
		_, isForm := cases[rt.pattern]
		_, isAction := actionRoutes[rt.pattern]
		if !isForm && !isAction {
			t.Errorf("%s has no case in formCases and is not listed in actionRoutes", rt.pattern)
		}
	}
	patterns := make([]string, 0, len(cases))
	for p := range cases {
		patterns = append(patterns, p)
	}
	slices.Sort(patterns)
	for _, pattern := range patterns {
		for _, tc := range cases[pattern] {
			t.Run(tc.path, func(t *testing.T) {
				fb := setupForms(t)
				form := url.Values{}
				for k, v := range tc.form {
					form[k] = slices.Clone(v)
				}
				if tc.prepare != nil {
					for k, v := range tc.prepare(t, fb) {
						form[k] = v
					}
				}
				var r response
				if tc.multipart {
					r = fb.multipart(t, tc.path, form)
				} else {
					r = fb.post(t, tc.path, form)
				}
				if r.status < 400 || r.status >= 500 {
					t.Fatalf("POST %s = %d, want a refusal\n%s", tc.path, r.status, r.body)
				}
				for _, f := range tc.bad {
					checkFieldError(t, r.body, f)
				}
				for _, f := range tc.kept {
					checkValue(t, r.body, f)
				}
				if len(tc.bad) > 1 && strings.Count(r.body, `class="field-error"`) < len(tc.bad) {
					t.Errorf("fewer errors shown than fields refused\n%s", r.body)
				}
			})
		}
	}
}

var (
	controlRE  = regexp.MustCompile(`<(?:input|select|textarea)\b[^>]*>`)
	attrIDRE   = regexp.MustCompile(`\bid="([^"]*)"`)
	describeRE = regexp.MustCompile(`\baria-describedby="([^"]*)"`)
)

// control finds the input, select or textarea with the given id and what follows it.
func control(body, id string) (tag, after string, ok bool) {
	for _, loc := range controlRE.FindAllStringIndex(body, -1) {
		tag := body[loc[0]:loc[1]]
		if m := attrIDRE.FindStringSubmatch(tag); m != nil && m[1] == id {
			return tag, body[loc[1]:], true
		}
	}
	return "", "", false
}

func checkFieldError(t *testing.T, body string, f badField) {
	t.Helper()
	tag, _, ok := control(body, f.id)
	if !ok {
		t.Errorf("no control with id %q\n%s", f.id, body)
		return
	}
	if !strings.Contains(tag, `aria-invalid="true"`) {
		t.Errorf("%s is not marked invalid: %s", f.id, tag)
	}
	d := describeRE.FindStringSubmatch(tag)
	if d == nil || !slices.Contains(strings.Fields(d[1]), f.id+"-error") {
		t.Errorf("%s is not described by its error: %s", f.id, tag)
	}
	if !strings.Contains(body, `class="field-error" id="`+f.id+`-error"`) {
		t.Errorf("no error beside %s", f.id)
	}
	if !strings.Contains(body, `<a href="#`+f.id+`">`) {
		t.Errorf("the summary does not link to %s", f.id)
	}
	if !f.secret {
		checkValue(t, body, f)
	}
}

// checkValue checks that the control shows the typed value: as its value, its selected
// option or its text.
func checkValue(t *testing.T, body string, f badField) {
	t.Helper()
	tag, after, ok := control(body, f.id)
	if !ok {
		t.Errorf("no control with id %q", f.id)
		return
	}
	escaped := template.HTMLEscapeString(f.value)
	switch {
	case strings.HasPrefix(tag, "<select"):
		options := after[:strings.Index(after, "</select>")]
		if f.value == "" {
			if strings.Contains(options, " selected") {
				t.Errorf("%s: an option is selected, want none\n%s", f.id, options)
			}
			return
		}
		if !strings.Contains(options, `value="`+escaped+`" selected`) {
			t.Errorf("%s: %q is not selected\n%s", f.id, f.value, options)
		}
	case strings.HasPrefix(tag, "<textarea"):
		if !strings.HasPrefix(after, escaped+"</textarea>") {
			t.Errorf("%s: text is not %q", f.id, f.value)
		}
	default:
		if !strings.Contains(tag, `value="`+escaped+`"`) {
			t.Errorf("%s: value is not %q: %s", f.id, f.value, tag)
		}
	}
}
