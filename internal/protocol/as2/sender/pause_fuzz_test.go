package sender

import (
	"testing"

	"wharf/internal/protocol/as2/mime"
)

// FuzzPauseFor reads a partner's Disposition field as a receipt carries it: whatever it
// says, a disposition that counts as success never pauses, and no input panics.
func FuzzPauseFor(f *testing.F) {
	for _, seed := range []string{
		"automatic-action/MDN-sent-automatically; processed/error: authentication-failed",
		"automatic-action/MDN-sent-automatically; failed/failure: unsupported MIC-algorithms",
		"automatic-action/MDN-sent-automatically; processed/warning: decryption-failed",
		"automatic-action/MDN-sent-automatically; processed",
		"automatic-action/MDN-sent-automatically; processed/error:   Insufficient   Message-Security ",
		"manual-action/MDN-sent-manually; failed",
		"; /:",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, field string) {
		d, err := mime.ParseDisposition(field)
		if err != nil {
			return
		}
		if reason := pauseFor(d); reason != "" && d.Successful() {
			t.Fatalf("successful disposition %q pauses: %q", field, reason)
		}
	})
}
