package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// handoffMessage is a message's detail with what a handoff adds to its deliveries.
type handoffMessage struct {
	ID         int64  `json:"id"`
	Status     string `json:"status"`
	Deliveries []struct {
		ID          int64  `json:"id"`
		State       string `json:"state"`
		LastError   string `json:"last_error"`
		ExternalRef string `json:"external_ref"`
	} `json:"deliveries"`
}

// report posts a completion or failure report with token and returns the status and the
// error code, if any.
func (h *harness) report(token string, deliveryID int64, action, body string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest("POST", fmt.Sprintf("http://%s/api/v1/deliveries/%d/%s", h.g.Addr(), deliveryID, action), strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	data, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(data, &e)
	return resp.StatusCode, e.Error.Code
}

// waitHandoff polls the message until it has the status, or fails the test.
func (h *harness) waitHandoff(id int64, status string) handoffMessage {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var m handoffMessage
		h.do("GET", fmt.Sprintf("/api/v1/messages/%d", id), "", nil, &m)
		if m.Status == status {
			return m
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("message %d is %s, want %s: %+v", id, m.Status, status, m)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// TestHandoffToInHouseSystems runs handoffs through a whole gateway: an http-poster whose
// receiver answers 202 with a job id (in a header, in a JSON body), completed and failed
// over REST with a scoped token; a file writer with await_completion, completed over
// REST, and one whose deadline passes. Each settles once, and the target never runs again.
func TestHandoffToInHouseSystems(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			h := start(t, url)
			h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
			var mu sync.Mutex
			posts := map[string]int{} // by message id
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				id := r.Header.Get("X-Wharf-Message-Id")
				mu.Lock()
				posts[id]++
				mu.Unlock()
				if r.URL.Path == "/header" {
					w.Header().Set("Location", "/jobs/job-"+id)
					w.WriteHeader(http.StatusAccepted)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusAccepted)
				fmt.Fprintf(w, `{"job_id":"job-%s"}`, id)
			}))
			defer srv.Close()
			for _, p := range []struct{ name, path, ref string }{
				{"erp_header", "/header", `{"header":"Location"}`},
				{"erp_json", "/json", `{"json_field":"job_id"}`},
			} {
				var ref map[string]any
				_ = json.Unmarshal([]byte(p.ref), &ref)
				h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{"name": p.name, "url": srv.URL + p.path,
					"handoff": map[string]any{"statuses": []int{202}, "deadline": "4h", "reference": ref}}, nil)
				h.mustJSON("POST", "/api/v1/services/http-poster/"+p.name+"/start", map[string]any{}, nil)
			}
			for _, w := range []struct{ name, await string }{{"erp_drop", "1h"}, {"erp_slow", "1s"}} {
				h.mustJSON("POST", "/api/v1/plugins/configs/file-writer", map[string]any{"name": w.name,
					"directory": filepath.Join(h.data, w.name), "await_completion": w.await}, nil)
				h.mustJSON("POST", "/api/v1/services/file-writer/"+w.name+"/start", map[string]any{}, nil)
			}
			var created struct{ Token string }
			h.mustJSON("POST", "/api/v1/tokens", map[string]string{"name": "erp", "target": "erp_header"}, &created)
			scoped := created.Token

			// A 202 with the job id in a header, completed with the scoped token.
			m := h.send("local", "acme", "erp_header", "a.edi", []byte("first"))
			got := h.waitHandoff(m.ID, "awaiting_receipt")
			d := got.Deliveries[0]
			if d.State != "awaiting_ack" || d.ExternalRef != fmt.Sprintf("/jobs/job-%d", m.ID) {
				t.Fatalf("header handoff: %+v", d)
			}
			if code, _ := h.report(scoped, d.ID, "complete", fmt.Sprintf(`{"note":"booked","reference":%q}`, d.ExternalRef)); code != 200 {
				t.Fatalf("complete = %d", code)
			}
			h.waitHandoff(m.ID, "delivered")
			if code, errCode := h.report(scoped, d.ID, "complete", ""); code != 409 || errCode != "DELIVERY_SETTLED" {
				t.Errorf("second completion = %d %s, want 409 DELIVERY_SETTLED", code, errCode)
			}

			// A 202 with the job id in a JSON body, failed with the unscoped token; the
			// scoped token may not touch it.
			m2 := h.send("local", "acme", "erp_json", "b.edi", []byte("second"))
			d2 := h.waitHandoff(m2.ID, "awaiting_receipt").Deliveries[0]
			if d2.ExternalRef != fmt.Sprintf("job-%d", m2.ID) {
				t.Fatalf("JSON handoff: %+v", d2)
			}
			if code, errCode := h.report(scoped, d2.ID, "complete", ""); code != 403 || errCode != "TOKEN_OUT_OF_SCOPE" {
				t.Errorf("scoped token on another target = %d %s, want 403 TOKEN_OUT_OF_SCOPE", code, errCode)
			}
			if code, _ := h.report("test-token", d2.ID, "fail", `{"reason":"article 0815 unknown"}`); code != 200 {
				t.Fatalf("fail = %d", code)
			}
			got = h.waitHandoff(m2.ID, "error")
			if got.Deliveries[0].LastError != "article 0815 unknown" {
				t.Errorf("failed handoff: %+v", got.Deliveries[0])
			}
			if code, errCode := h.report("test-token", d2.ID, "complete", ""); code != 409 || errCode != "DELIVERY_SETTLED" {
				t.Errorf("completion after failure = %d %s, want 409 DELIVERY_SETTLED", code, errCode)
			}

			// A file writer waiting for the system that picks the file up.
			m3 := h.send("local", "acme", "erp_drop", "c.edi", []byte("third"))
			d3 := h.waitHandoff(m3.ID, "awaiting_receipt").Deliveries[0]
			if data, err := os.ReadFile(filepath.Join(h.data, "erp_drop", "local", "c.edi")); err != nil || !bytes.Equal(data, []byte("third")) {
				t.Errorf("written file: %q, %v", data, err)
			}
			if code, _ := h.report("test-token", d3.ID, "complete", ""); code != 200 {
				t.Fatalf("complete file handoff = %d", code)
			}
			h.waitHandoff(m3.ID, "delivered")

			// One whose deadline passes fails by the sweep; a completion after it is refused.
			m4 := h.send("local", "acme", "erp_slow", "d.edi", []byte("fourth"))
			got = h.waitHandoff(m4.ID, "error")
			if !strings.Contains(got.Deliveries[0].LastError, "before the deadline") {
				t.Errorf("expired handoff: %+v", got.Deliveries[0])
			}
			if code, errCode := h.report("test-token", got.Deliveries[0].ID, "complete", ""); code != 409 || errCode != "DELIVERY_SETTLED" {
				t.Errorf("completion after the deadline = %d %s, want 409 DELIVERY_SETTLED", code, errCode)
			}

			mu.Lock()
			for _, id := range []int64{m.ID, m2.ID} {
				if n := posts[fmt.Sprint(id)]; n != 1 {
					t.Errorf("message %d was posted %d times, want once", id, n)
				}
			}
			mu.Unlock()
			h.checkInvariant()
		})
	}
}
