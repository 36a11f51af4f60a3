package eventhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// receiver is an event-webhook endpoint as a subscriber writes one: it verifies every
// request by the Standard Webhooks specification, written here from the specification
// rather than with the gateway's own package (the secret is the base64 after whsec_; the
// signed content is webhook-id "." webhook-timestamp "." body; each space-separated
// "v1,<base64 HMAC-SHA256>" of webhook-signature is a candidate), and keeps what it
// acknowledged.
type receiver struct {
	mu      sync.Mutex
	secret  string
	fail    func(id string, seen int) int // status to answer instead of 204; 0: none
	seen    map[string]int                // requests per webhook-id
	acked   map[string]int                // 2xx answers per webhook-id
	events  map[string]event              // acknowledged events by webhook-id
	bad     []string                      // what failed verification
	bodies  []string
	clockAt func() time.Time
}

type event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      struct {
		EventID        int64  `json:"event_id"`
		MessageID      int64  `json:"message_id"`
		DeliveryID     *int64 `json:"delivery_id"`
		Target         string `json:"target"`
		From           string `json:"from"`
		To             string `json:"to"`
		FromState      string `json:"from_state"`
		ToState        string `json:"to_state"`
		SessionBlocked bool   `json:"session_blocked"`
		CorrelationID  string `json:"correlation_id"`
		OriginEventID  string `json:"origin_event_id"`
	} `json:"data"`
}

func newReceiver() *receiver {
	return &receiver{seen: map[string]int{}, acked: map[string]int{}, events: map[string]event{}, clockAt: time.Now}
}

func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	r.secret = s
	r.mu.Unlock()
}

// verify checks one request by the specification; it names what is wrong.
func verify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		return fmt.Errorf("secret is not whsec_<base64>")
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	if id == "" || ts == "" {
		return fmt.Errorf("missing webhook-id or webhook-timestamp")
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp %q is not an integer", ts)
	}
	if d := now.Sub(time.Unix(secs, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("webhook-timestamp %s is %s off", ts, d)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Split(h.Get("webhook-signature"), " ") {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no v1 signature of %q matches", id)
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := verify(r.secret, req.Header, body, r.clockAt()); err != nil {
		r.bad = append(r.bad, err.Error())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	id := req.Header.Get("webhook-id")
	r.seen[id]++
	r.bodies = append(r.bodies, string(body))
	if r.fail != nil {
		if code := r.fail(id, r.seen[id]); code != 0 {
			w.WriteHeader(code)
			return
		}
	}
	var e event
	if err := json.Unmarshal(body, &e); err != nil {
		r.bad = append(r.bad, "body: "+err.Error())
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.acked[id]++
	r.events[id] = e
	w.WriteHeader(http.StatusNoContent)
}

// snapshot copies what the receiver acknowledged.
func (r *receiver) snapshot() (events map[string]event, acked map[string]int, bad []string, bodies []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events, acked = map[string]event{}, map[string]int{}
	for k, v := range r.events {
		events[k] = v
	}
	for k, v := range r.acked {
		acked[k] = v
	}
	return events, acked, append([]string(nil), r.bad...), append([]string(nil), r.bodies...)
}
