package mime

import (
	"testing"

	"wharf/internal/persistence"
)

func TestSanitizeFileNameUnhides(t *testing.T) {
	tests := []struct {
		raw  string
		want persistence.FileName
	}{
		{"order.edi", "order.edi"},
		{".hidden", "_hidden"},
		{".wharf-tmp-x", "_wharf-tmp-x"},
		{"  .edi ", "_edi"},
		{"../../.profile", "_profile"},
		{`C:\in\.x12`, "_x12"},
		{"..", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := sanitizeFileName(tt.raw); got != tt.want {
			t.Errorf("sanitizeFileName(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}
