package sender

import (
	"strings"
	"testing"

	"wharf/internal/protocol/as2/mime"
)

// TestPauseFor holds the classification of refusing dispositions: those a partner
// repeats for every message pause it, those about one message do not.
func TestPauseFor(t *testing.T) {
	tests := []struct {
		disposition string
		pauses      bool
	}{
		{"automatic-action/MDN-sent-automatically; processed/error: authentication-failed", true},
		{"automatic-action/MDN-sent-automatically; processed/error: decryption-failed", true},
		{"automatic-action/MDN-sent-automatically; processed/error: insufficient-message-security", true},
		{"automatic-action/MDN-sent-automatically; failed/failure: unsupported MIC-algorithms", true},
		{"automatic-action/MDN-sent-automatically; processed/Error: Authentication-Failed", true},
		{"automatic-action/MDN-sent-automatically; failed/failure: unsupported-algorithm", true},
		{"automatic-action/MDN-sent-automatically; processed/error: integrity-check-failed", false},
		{"automatic-action/MDN-sent-automatically; processed/error: decompression-failed", false},
		{"automatic-action/MDN-sent-automatically; processed/error: duplicate-document", false},
		{"automatic-action/MDN-sent-automatically; processed/error: unexpected-processing-error", false},
		{"automatic-action/MDN-sent-automatically; processed", false},
		{"automatic-action/MDN-sent-automatically; processed/warning: authentication-failed", false},
		{"automatic-action/MDN-sent-automatically; failed/failure: sender-equals-receiver", false},
	}
	for _, tt := range tests {
		t.Run(tt.disposition, func(t *testing.T) {
			d, err := mime.ParseDisposition(tt.disposition)
			if err != nil {
				t.Fatal(err)
			}
			got := pauseFor(d)
			if (got != "") != tt.pauses {
				t.Fatalf("pauseFor = %q, want pausing %v", got, tt.pauses)
			}
			if tt.pauses && !strings.Contains(got, "resume") {
				t.Fatalf("reason %q does not say what to do", got)
			}
		})
	}
}
