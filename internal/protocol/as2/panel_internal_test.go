package as2

import (
	"testing"

	"wharf/internal/protocol/as2/profile"
)

// TestCompressionText names the compression order only where it matters: for a message
// both compressed and signed.
func TestCompressionText(t *testing.T) {
	for _, tt := range []struct {
		compress bool
		sign     profile.SigningAlgorithm
		order    profile.CompressionOrder
		want     string
	}{
		{true, profile.SignSHA256, profile.CompressAfterSigning, "yes (after signing)"},
		{true, profile.SignSHA256, profile.CompressBeforeSigning, "yes (before signing)"},
		{true, profile.SignNone, profile.CompressAfterSigning, "yes"},
		{false, profile.SignSHA256, profile.CompressAfterSigning, "no"},
	} {
		r := profile.NewRemote()
		r.Compress, r.SigningAlgorithm, r.CompressionOrder = tt.compress, tt.sign, tt.order
		if got := compressionText(r); got != tt.want {
			t.Errorf("compress %v, sign %s, order %s: %q, want %q", tt.compress, tt.sign, tt.order, got, tt.want)
		}
	}
}
