package httptarget

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

func TestCheckHeaderName(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"Authorization", ""},
		{"x-api-key", ""},
		{"", "empty header name"},
		{"Bad Name", "not allowed in a header name"},
		{"content-type", "header Content-Type is set by the poster or the transport"},
		{"idempotency-key", "header Idempotency-Key is set by the poster or the transport"},
		{"X-Wharf-From", "header X-Wharf-From: the X-Wharf- prefix is reserved"},
	} {
		err := CheckHeaderName(tc.name, "poster", "Idempotency-Key")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckHeaderName(%q) = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		code       int
		retryAfter string
		kind       persistence.OutcomeKind
		class      delivery.ErrorClass
		at         time.Time
	}{
		{204, "", persistence.OutcomeDelivered, "", time.Time{}},
		{302, "", persistence.OutcomeRetry, delivery.ClassHTTP4xx, time.Time{}},
		{404, "", persistence.OutcomeRetry, delivery.ClassHTTP4xx, time.Time{}},
		{408, "", persistence.OutcomeRetry, delivery.ClassThrottled, time.Time{}},
		{429, "30", persistence.OutcomeRetry, delivery.ClassThrottled, now.Add(30 * time.Second)},
		{503, "", persistence.OutcomeRetry, delivery.ClassHTTP5xx, time.Time{}},
	} {
		resp := &http.Response{StatusCode: tc.code, Header: http.Header{}}
		if tc.retryAfter != "" {
			resp.Header.Set("Retry-After", tc.retryAfter)
		}
		r := Classify(resp, now)
		if r.Kind != tc.kind || r.Class != tc.class || !r.At.Equal(tc.at) {
			t.Errorf("status %d: got %s %q at %v, want %s %q at %v", tc.code, r.Kind, r.Class, r.At, tc.kind, tc.class, tc.at)
		}
	}
}
