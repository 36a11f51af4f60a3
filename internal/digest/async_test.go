package digest

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// The digest taken aside is the digest of the bytes written, however they are split,
// and a digest stopped early ends its goroutine.
func TestAsync(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 200_000)
	cases := []struct {
		name  string
		size  int
		chunk int
	}{
		{"empty", 0, 1},
		{"one byte", 1, 7},
		{"a buffer less one", digestBuffer - 1, 4096},
		{"one buffer", digestBuffer, digestBuffer},
		{"past every buffer", len(data), 65537},
		{"in one write", len(data), len(data)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := NewAsync()
			for p := data[:tc.size]; len(p) > 0; {
				n := min(tc.chunk, len(p))
				d.Write(p[:n])
				p = p[n:]
			}
			if got, want := d.Sum(), sha256.Sum256(data[:tc.size]); !bytes.Equal(got, want[:]) {
				t.Fatalf("digest %x, want %x", got, want)
			}
		})
	}
	d := NewAsync()
	d.Write(data)
	d.Stop()
	d.Stop()
}
