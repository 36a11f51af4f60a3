package sender

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStatusError holds what a 4xx answer's body adds to the reason: the first line of a
// plain text body, bounded and without URLs; nothing from other bodies.
func TestStatusError(t *testing.T) {
	long := strings.Repeat("é", 300)
	tests := []struct {
		name, contentType, body string
		want                    string
	}{
		{"first line", "text/plain; charset=utf-8", "\r\nlarger than the limit of 512 MiB\r\nmore\r\n",
			"HTTP 413 Request Entity Too Large: larger than the limit of 512 MiB"},
		{"untyped", "", "no agreement for AS2-To\n", "HTTP 413 Request Entity Too Large: no agreement for AS2-To"},
		{"html", "text/html", "<html><body>too large</body></html>", "HTTP 413 Request Entity Too Large"},
		{"binary", "text/plain", "a\x00b\n", "HTTP 413 Request Entity Too Large"},
		{"empty", "text/plain", "", "HTTP 413 Request Entity Too Large"},
		{"the status text again", "text/plain", "Request Entity Too Large\n", "HTTP 413 Request Entity Too Large"},
		{"url", "text/plain", "see https://user:pw@partner.example/help?token=x for why", "HTTP 413 Request Entity Too Large: see [url] for why"},
		{"control characters", "text/plain", "bad\x1b[31m thing", "HTTP 413 Request Entity Too Large: bad [31m thing"},
		{"long", "text/plain", long, "HTTP 413 Request Entity Too Large: " + strings.Repeat("é", 100) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: http.StatusRequestEntityTooLarge, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader(tt.body))}
			if tt.contentType != "" {
				resp.Header.Set("Content-Type", tt.contentType)
			}
			if got := statusError(resp).Error(); got != tt.want {
				t.Errorf("statusError = %q\nwant          %q", got, tt.want)
			}
		})
	}
}
