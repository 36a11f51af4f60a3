package download

import (
	"testing"

	"wharf/internal/persistence"
)

func TestFileName(t *testing.T) {
	m := persistence.Message{ID: 42}
	tests := []struct {
		original string
		stage    persistence.PayloadStage
		want     string
	}{
		{"invoice.edi", persistence.PayloadUnpacked, "invoice.edi"},
		{"réception 1.xml", persistence.PayloadUnpacked, "r_ception_1.xml"},
		{`a"b;c.txt`, persistence.PayloadUnpacked, "a_b_c.txt"},
		{".hidden", persistence.PayloadUnpacked, "hidden"},
		{"..hidden name.edi", persistence.PayloadUnpacked, "hidden_name.edi"},
		{"...", persistence.PayloadUnpacked, "message-42.bin"},
		{"", persistence.PayloadUnpacked, "message-42-unpacked.bin"},
		{"invoice.edi", persistence.PayloadReceived, "message-42-received.bin"},
		{"invoice.edi", persistence.PayloadHeaders, "message-42-headers.txt"},
		{"invoice.edi", persistence.PayloadReceipt, "message-42-receipt.bin"},
	}
	for _, tt := range tests {
		m.OriginalFileName = persistence.FileName(tt.original)
		if got := FileName(m, tt.stage); got != tt.want {
			t.Errorf("FileName(%q, %s) = %q, want %q", tt.original, tt.stage, got, tt.want)
		}
	}
}
