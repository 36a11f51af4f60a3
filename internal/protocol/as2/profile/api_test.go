package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// serve mounts the routes the way the core does, in miniature: JSON answers, and errors
// mapped by their kind.
func serve(t *testing.T, routes []module.APIRoute) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.HandleFunc(rt.Method+" "+rt.Path, func(w http.ResponseWriter, r *http.Request) {
			if rt.Body == module.BodyJSON && r.Header.Get("Content-Type") != "application/json" {
				writeTestJSON(w, http.StatusUnsupportedMediaType, errorBody("UNSUPPORTED_MEDIA_TYPE", "", nil))
				return
			}
			status, v, err := rt.Handle(r)
			if err != nil {
				writeTestError(w, err)
				return
			}
			if v == nil {
				w.WriteHeader(status)
				return
			}
			writeTestJSON(w, status, v)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func writeTestError(w http.ResponseWriter, err error) {
	var fe *persistence.FieldError
	var ae *module.APIError
	switch {
	case errors.As(err, &fe):
		writeTestJSON(w, 400, errorBody("INVALID_INPUT", err.Error(), map[string]any{fe.Field: fe.Message}))
	case errors.As(err, &ae):
		writeTestJSON(w, ae.Status, errorBody(ae.Code, ae.Message, ae.Details))
	case errors.Is(err, persistence.ErrNotFound):
		writeTestJSON(w, 404, errorBody("NOT_FOUND", err.Error(), nil))
	case errors.Is(err, persistence.ErrConflict):
		writeTestJSON(w, 409, errorBody("CONFLICT", err.Error(), nil))
	default:
		writeTestJSON(w, 500, errorBody("INTERNAL", err.Error(), nil))
	}
}

func errorBody(code, msg string, details map[string]any) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": msg, "details": details}}
}

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// call makes one request and decodes the JSON answer, if any.
func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %s", method, path, raw)
		}
	}
	return resp.StatusCode, out
}

// errorField returns the code of an error answer and the message for field in details.
func errorField(body map[string]any, field string) (code string, msg any) {
	e, _ := body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	code, _ = e["code"].(string)
	return code, d[field]
}

func TestAPILocalProfiles(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		srv := serve(t, e.store.Routes())
		const base = "/api/v1/as2/local-profiles"

		status, body := call(t, srv, "POST", base, fmt.Sprintf(`{"organization":"local","as2_id":"WHARF","signing_certificate_id":%d,"decryption_certificate_id":%d}`, w.ourCert, w.ourCert))
		if status != 201 || body["as2_id"] != "WHARF" || body["max_message_size_mib"] != float64(512) || body["previous_decryption_certificate_id"] != nil {
			t.Fatalf("POST = %d %v", status, body)
		}
		status, body = call(t, srv, "GET", base+"/local", "")
		if status != 200 || body["organization"] != "local" || body["signing_certificate_id"] != float64(w.ourCert) {
			t.Errorf("GET = %d %v", status, body)
		}
		status, body = call(t, srv, "GET", base, "")
		if list, _ := body["local_profiles"].([]any); status != 200 || len(list) != 1 || body["total"] != float64(1) ||
			body["limit"] != float64(100) || body["offset"] != float64(0) {
			t.Errorf("list = %d %v", status, body)
		}

		// PUT takes the whole object; what is left out goes back to its default.
		status, body = call(t, srv, "PUT", base+"/local", `{"as2_id":"WHARF-2","mdn_notification_to":"edi@wharf.example"}`)
		if status != 200 || body["as2_id"] != "WHARF-2" || body["signing_certificate_id"] != float64(0) || body["mdn_notification_to"] != "edi@wharf.example" {
			t.Errorf("PUT = %d %v", status, body)
		}
		status, body = call(t, srv, "PUT", base+"/local", `{"organization":"other","as2_id":"X"}`)
		if code, msg := errorField(body, "organization"); status != 400 || code != "INVALID_INPUT" || msg == nil {
			t.Errorf("PUT naming another organization = %d %v", status, body)
		}

		status, body = call(t, srv, "POST", base, `{"as2_id":"NONAME"}`)
		if _, msg := errorField(body, "organization"); status != 400 || msg == nil {
			t.Errorf("POST without organization = %d %v", status, body)
		}
		status, body = call(t, srv, "POST", base, `{"organization":"local","as2_id":"WHARF-3"}`)
		if code, _ := errorField(body, ""); status != 409 || code != CodeProfileExists {
			t.Errorf("second POST = %d %v", status, body)
		}

		status, _ = call(t, srv, "DELETE", base+"/local", "")
		if status != 204 {
			t.Errorf("DELETE = %d", status)
		}
		for _, m := range []string{"GET", "DELETE"} {
			if status, body = call(t, srv, m, base+"/local", ""); status != 404 {
				t.Errorf("%s after delete = %d %v", m, status, body)
			}
		}
		status, body = call(t, srv, "PUT", base+"/local", `{"as2_id":"WHARF"}`)
		if status != 404 {
			t.Errorf("PUT after delete = %d %v", status, body)
		}
		status, body = call(t, srv, "GET", base+"/Not%20A%20Name", "")
		if _, msg := errorField(body, "organization"); status != 400 || msg == nil {
			t.Errorf("GET with a bad name = %d %v", status, body)
		}
	})
}

func TestAPIRemoteProfiles(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		_, theirs := rsaKeys(t)
		srv := serve(t, e.store.Routes())
		const base = "/api/v1/as2/remote-profiles"

		// DESIGN §9's shape, with the single partner_certificate_id; the rest defaults.
		status, body := call(t, srv, "POST", base, fmt.Sprintf(`{"partner":"acme","as2_id":"ACME","endpoint_url":"https://as2.acme.example/in","partner_certificate_id":%d}`, w.theirCert))
		if status != 201 {
			t.Fatalf("POST = %d %v", status, body)
		}
		for k, want := range map[string]any{
			"compress": true, "signing_algorithm": "sha256", "encryption_algorithm": "aes256-cbc",
			"key_transport": "rsa-pkcs1v15", "mdn_mode": "sync", "signed_mdn": true, "mdn_mic_algorithm": "sha256",
			"require_signed": true, "require_encrypted": true, "allow_sha1": false, "async_mdn_url": "",
			"partner_certificate_id": float64(w.theirCert), "our_signing_certificate_id": nil,
			"connect_timeout_seconds": float64(10), "max_message_size_mib": float64(512),
			"algorithm_protection": false,
			"gcm_confirmed":        false, "duplicate_content": "accept", "duplicate_content_window_hours": float64(24),
			"chunked": "auto",
		} {
			if got, ok := body[k]; !ok || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("POST answer %s = %v, want %v", k, got, want)
			}
		}
		if ids, _ := body["partner_certificate_ids"].([]any); len(ids) != 1 || ids[0] != float64(w.theirCert) {
			t.Errorf("partner_certificate_ids = %v", body["partner_certificate_ids"])
		}
		if hosts, ok := body["async_mdn_hosts"].([]any); !ok || len(hosts) != 0 {
			t.Errorf("async_mdn_hosts = %#v, want []", body["async_mdn_hosts"])
		}
		// The retry policy shows what the sender applies, not the empty object stored.
		wantRetry := map[string]any{"strategy": "exponential", "base": "30s", "max_delay": "1h0m0s", "max_retries": float64(10), "jitter": 0.2}
		if retry, _ := body["retry"].(map[string]any); fmt.Sprint(retry) != fmt.Sprint(wantRetry) {
			t.Errorf("retry = %v, want %v", body["retry"], wantRetry)
		}

		// What GET returns goes back through PUT unchanged, apart from updated_at.
		status, got := call(t, srv, "GET", base+"/acme", "")
		if status != 200 {
			t.Fatalf("GET = %d %v", status, got)
		}
		next, _ := e.cert("acme-next", theirs, time.Now().Add(-time.Hour), time.Now().Add(365*24*time.Hour), false)
		got["partner_certificate_ids"] = []int64{w.theirCert, next}
		raw, _ := json.Marshal(got)
		status, body = call(t, srv, "PUT", base+"/acme", string(raw))
		if status != 200 || body["created_at"] != got["created_at"] || body["partner_certificate_id"] != float64(next) {
			t.Errorf("PUT of GET's object = %d %v", status, body)
		}

		// AES-GCM with the partner's confirmation, and the duplicate content policy, are
		// stored and returned.
		got["encryption_algorithm"], got["gcm_confirmed"] = "aes256-gcm", true
		got["duplicate_content"], got["duplicate_content_window_hours"] = "refuse", 48
		delete(got, "partner_certificate_id")
		raw, _ = json.Marshal(got)
		status, body = call(t, srv, "PUT", base+"/acme", string(raw))
		if status != 200 || body["encryption_algorithm"] != "aes256-gcm" || body["gcm_confirmed"] != true ||
			body["duplicate_content"] != "refuse" || body["duplicate_content_window_hours"] != float64(48) {
			t.Errorf("PUT with GCM and duplicate_content = %d %v", status, body)
		}

		status, body = call(t, srv, "GET", base+"?limit=1&offset=0", "")
		if list, _ := body["remote_profiles"].([]any); status != 200 || len(list) != 1 || body["limit"] != float64(1) {
			t.Errorf("list = %d %v", status, body)
		}

		e.party(persistence.PartyPartner, "globex")
		status, body = call(t, srv, "POST", base, fmt.Sprintf(`{"partner":"globex","as2_id":"ACME","endpoint_url":"https://globex.example/as2","partner_certificate_ids":[%d]}`, w.theirCert))
		if code, _ := errorField(body, ""); status != 409 || code != CodeAS2IDTaken {
			t.Errorf("POST with a taken AS2 id = %d %v", status, body)
		}

		status, body = call(t, srv, "GET", base+"/globex", "")
		if code, _ := errorField(body, ""); status != 404 || code != "NOT_FOUND" {
			t.Errorf("GET missing = %d %v", status, body)
		}
		if status, _ = call(t, srv, "DELETE", base+"/acme", ""); status != 204 {
			t.Errorf("DELETE = %d", status)
		}
	})
}

func TestAPIRefusesBadInput(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		w := e.world()
		srv := serve(t, e.store.Routes())
		const base = "/api/v1/as2/remote-profiles"
		good := fmt.Sprintf(`"partner":"acme","as2_id":"ACME","endpoint_url":"https://as2.acme.example/in","partner_certificate_ids":[%d]`, w.theirCert)
		tests := []struct {
			name, method, path, body string
			field                    string
		}{
			{"bad algorithm", "POST", base, `{` + good + `,"signing_algorithm":"md5"}`, "signing_algorithm"},
			{"sha1", "POST", base, `{` + good + `,"signing_algorithm":"sha1"}`, "signing_algorithm"},
			{"gcm unconfirmed", "POST", base, `{` + good + `,"encryption_algorithm":"aes256-gcm"}`, "gcm_confirmed"},
			{"gcm not confirmed", "POST", base, `{` + good + `,"encryption_algorithm":"aes128-gcm","gcm_confirmed":false}`, "gcm_confirmed"},
			{"bad duplicate content", "POST", base, `{` + good + `,"duplicate_content":"drop"}`, "duplicate_content"},
			{"bad chunked", "POST", base, `{` + good + `,"chunked":"sometimes"}`, "chunked"},
			{"bad content window", "POST", base, `{` + good + `,"duplicate_content_window_hours":0}`, "duplicate_content_window_hours"},
			{"bad AS2 id", "POST", base, `{"partner":"acme","as2_id":" ACME"}`, "as2_id"},
			{"wrong type", "POST", base, `{` + good + `,"compress":"yes"}`, "compress"},
			{"algorithm protection not a boolean", "POST", base, `{` + good + `,"algorithm_protection":"on"}`, "algorithm_protection"},
			{"unknown field", "POST", base, `{` + good + `,"colour":"blue"}`, "colour"},
			{"unknown retry field", "POST", base, `{` + good + `,"retry":{"tries":3}}`, "retry.tries"},
			{"bad retry strategy", "POST", base, `{` + good + `,"retry":{"strategy":"random"}}`, "retry.strategy"},
			{"bad rule duration", "POST", base, `{` + good + `,"retry":{"rules":{"http_5xx":{"base":"soon"}}}}`, "retry.rules.http_5xx.base"},
			{"unknown rule class", "POST", base, `{` + good + `,"retry":{"rules":{"http_600":{}}}}`, "retry.rules.http_600"},
			{"bad retry value", "POST", base, `{` + good + `,"retry":{"jitter":5}}`, "retry.jitter"},
			{"bad partner", "POST", base, `{"partner":"ACME"}`, "partner"},
			{"no partner", "POST", base, `{"as2_id":"ACME"}`, "partner"},
			{"missing partner", "POST", base, `{` + strings.Replace(good, `"acme"`, `"nobody"`, 1) + `}`, "partner"},
			{"missing certificate", "POST", base, `{` + good + `,"tls_trust_certificate_ids":[12345]}`, "tls_trust_certificate_ids"},
			{"endpoint with credentials", "POST", base, `{` + strings.Replace(good, "https://", "https://u:p@", 1) + `}`, "endpoint_url"},
			{"no certificate while encrypting", "POST", base, `{"partner":"acme","as2_id":"ACME","endpoint_url":"https://a.example/"}`, "partner_certificate_ids"},
			{"single id not in list", "POST", base, `{` + good + `,"partner_certificate_id":999}`, "partner_certificate_id"},
			{"single id bad", "POST", base, `{"partner":"acme","partner_certificate_id":"x"}`, "partner_certificate_id"},
			{"array body", "POST", base, `[]`, "body"},
			{"trailing data", "POST", base, `{}{}`, "body"},
			{"malformed", "POST", base, `{"partner":`, "body"},
			{"bad limit", "GET", base + "?limit=0", "", "limit"},
			{"bad offset", "GET", base + "?offset=-1", "", "offset"},
			{"bad path", "PUT", base + "/ACME", `{}`, "partner"},
		}
		for _, tt := range tests {
			status, body := call(t, srv, tt.method, tt.path, tt.body)
			if code, msg := errorField(body, tt.field); status != 400 || code != "INVALID_INPUT" || msg == nil {
				t.Errorf("%s: %d %v, want INVALID_INPUT on %s", tt.name, status, body, tt.field)
			}
		}
		if _, total, _ := e.store.ListRemotes(e.ctx, persistence.ListOptions{}); total != 0 {
			t.Errorf("%d profiles stored from bad input", total)
		}
	})
}
