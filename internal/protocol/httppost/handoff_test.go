package httppost

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// TestPosterHandsOff posts to a loopback receiver that answers as an in-house system
// would, and holds which answers become awaiting_ack and with which reference.
func TestPosterHandsOff(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	header := HandoffConfig{Statuses: []int{202}, Deadline: delivery.Duration(4 * time.Hour),
		Reference: HandoffReference{Header: "Location"}}
	jsonField := HandoffConfig{Statuses: []int{202}, Deadline: delivery.Duration(4 * time.Hour),
		Reference: HandoffReference{JSONField: "job_id"}}
	tests := []struct {
		name     string
		handoff  HandoffConfig
		status   int
		header   map[string]string
		body     string
		kind     persistence.OutcomeKind
		ref      string
		noteHave string
	}{
		{"202 with the reference in a header", header, 202, map[string]string{"Location": "/jobs/job-42"}, "",
			persistence.OutcomeAwaitingAck, "/jobs/job-42", "reference /jobs/job-42"},
		{"202 with the reference in a JSON field", jsonField, 202, nil, `{"job_id":"job-42","state":"queued"}`,
			persistence.OutcomeAwaitingAck, "job-42", "HTTP 202"},
		{"202 with a numeric JSON reference", jsonField, 202, nil, `{"job_id":4711}`,
			persistence.OutcomeAwaitingAck, "4711", "reference 4711"},
		{"200 is delivered though 202 hands off", jsonField, 200, nil, `{"job_id":"job-42"}`,
			persistence.OutcomeDelivered, "", ""},
		{"202 without a handoff block is delivered", HandoffConfig{}, 202, nil, `{"job_id":"job-42"}`,
			persistence.OutcomeDelivered, "", ""},
		{"202 without the header still waits", header, 202, nil, "",
			persistence.OutcomeAwaitingAck, "", "no Location header"},
		{"202 whose body is not JSON still waits", jsonField, 202, nil, "accepted",
			persistence.OutcomeAwaitingAck, "", "not a JSON object"},
		{"202 with a reference too long", jsonField, 202, nil, `{"job_id":"` + strings.Repeat("x", 300) + `"}`,
			persistence.OutcomeAwaitingAck, "", "longer than 200"},
		{"202 with a reference of spaces", jsonField, 202, nil, `{"job_id":"job 42\r\nX: y"}`,
			persistence.OutcomeAwaitingAck, "", "printable ASCII"},
		{"202 with an object for a reference", jsonField, 202, nil, `{"job_id":{"id":1}}`,
			persistence.OutcomeAwaitingAck, "", "neither a string nor a number"},
		{"202 with a reference and no place named", HandoffConfig{Statuses: []int{202}, Deadline: delivery.Duration(time.Hour)}, 202,
			map[string]string{"Location": "/jobs/1"}, "", persistence.OutcomeAwaitingAck, "", "HTTP 202"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}, func(c *PosterConfig) { c.Handoff = tt.handoff })
			b.poster.now = func() time.Time { return now }
			r := b.deliver(t)
			if r.Kind != tt.kind || r.Ref != tt.ref {
				t.Fatalf("result %s with reference %q (%+v), want %s with %q", r.Kind, r.Ref, r, tt.kind, tt.ref)
			}
			if tt.kind != persistence.OutcomeAwaitingAck {
				return
			}
			if want := now.Add(time.Duration(tt.handoff.Deadline)); !r.Deadline.Equal(want) {
				t.Errorf("deadline %v, want %v", r.Deadline, want)
			}
			if !strings.Contains(r.Note, tt.noteHave) {
				t.Errorf("note %q, want it to contain %q", r.Note, tt.noteHave)
			}
		})
	}
}
