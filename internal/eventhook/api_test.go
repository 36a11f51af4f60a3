package eventhook_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"wharf/internal/gateway/gatewaytest"
)

// The module's REST routes as a script meets them: a created subscription's secret is
// answered once and never again; a secret in the body is refused; the test row shows in
// the delivery log; enabling one that is not disabled changes nothing; unknown names are
// 404 and bad filters 400.
func TestEventWebhookREST(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.Options{})
	recv := newReceiver()
	srv := httptest.NewServer(recv)
	defer srv.Close()
	api := func(method, path, body string) (int, string) {
		t.Helper()
		var code int
		var data []byte
		if body == "" {
			code, data = g.API(method, path, "", nil)
		} else {
			code, data = g.API(method, path, "application/json", strings.NewReader(body))
		}
		return code, string(data)
	}

	code, body := api("POST", "/api/v1/event-webhooks", `{"name":"hooks","url":"`+srv.URL+`/in","events":["message.*","session.blocked"],"party":"local"}`)
	if code != http.StatusCreated {
		t.Fatalf("create = %d %s", code, body)
	}
	var created struct {
		Secret       string         `json:"secret"`
		EventWebhook map[string]any `json:"event_webhook"`
	}
	if err := json.Unmarshal([]byte(body), &created); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.Secret, "whsec_") || created.EventWebhook["name"] != "hooks" || created.EventWebhook["url"] != nil {
		t.Fatalf("create answered %s", body)
	}
	recv.setSecret(created.Secret)
	for _, path := range []string{"/api/v1/plugins/configs/event-webhook/hooks", "/api/v1/event-webhooks"} {
		if code, body := api("GET", path, ""); code != http.StatusOK || strings.Contains(body, created.Secret) || strings.Contains(body, srv.URL) {
			t.Fatalf("GET %s = %d %s: shows a write-only field", path, code, body)
		}
	}
	if code, body := api("POST", "/api/v1/event-webhooks", `{"name":"mine","url":"https://x.example/in","events":["*"],"secret":"whsec_c2VjcmV0c2VjcmV0c2VjcmV0"}`); code != http.StatusBadRequest || !strings.Contains(body, `"secret"`) {
		t.Fatalf("create with a secret = %d %s", code, body)
	}
	if code, body := api("POST", "/api/v1/event-webhooks", `{"name":"bad","url":"https://x.example/in","events":["message.nope"]}`); code != http.StatusBadRequest || !strings.Contains(body, `"events"`) {
		t.Fatalf("create with an unknown event type = %d %s", code, body)
	}

	if code, body := api("POST", "/api/v1/services/event-webhook/hooks/start", "{}"); code/100 != 2 {
		t.Fatalf("start = %d %s", code, body)
	}
	if code, body := api("POST", "/api/v1/event-webhooks/hooks/test", ""); code != http.StatusAccepted {
		t.Fatalf("test = %d %s", code, body)
	}
	waitFor(t, "the test event delivered", func() (bool, string) {
		_, body := api("GET", "/api/v1/event-webhooks/hooks/deliveries?state=delivered", "")
		return strings.Contains(body, `"type":"webhook.test"`), body
	})
	if got, _, bad, _ := recv.snapshot(); len(got) != 1 || len(bad) > 0 {
		t.Fatalf("receiver got %v, refused %v", got, bad)
	}
	if code, body := api("POST", "/api/v1/event-webhooks/hooks/enable", ""); code != http.StatusOK || !strings.Contains(body, `"was_disabled":false`) {
		t.Fatalf("enable = %d %s", code, body)
	}
	code, body = api("POST", "/api/v1/event-webhooks/hooks/secret", "")
	if code != http.StatusOK || strings.Contains(body, created.Secret) || !strings.Contains(body, `"secret":"whsec_`) {
		t.Fatalf("rotate = %d %s", code, body)
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"POST", "/api/v1/event-webhooks/nosuch/test", http.StatusNotFound},
		{"POST", "/api/v1/event-webhooks/nosuch/secret", http.StatusNotFound},
		{"POST", "/api/v1/event-webhooks/nosuch/enable", http.StatusNotFound},
		{"GET", "/api/v1/event-webhooks/nosuch/deliveries", http.StatusNotFound},
		{"POST", "/api/v1/event-webhooks/file_writer_default/test", http.StatusNotFound},
		{"GET", "/api/v1/event-webhooks/hooks/deliveries?state=lost", http.StatusBadRequest},
		{"GET", "/api/v1/event-webhooks?limit=0", http.StatusBadRequest},
	} {
		if code, body := api(tc.method, tc.path, ""); code != tc.status {
			t.Errorf("%s %s = %d %s, want %d", tc.method, tc.path, code, body, tc.status)
		}
	}
}
