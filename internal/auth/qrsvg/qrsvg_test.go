package qrsvg

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"rsc.io/qr"
)

type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	ViewBox string   `xml:"viewBox,attr"`
	Role    string   `xml:"role,attr"`
	Label   string   `xml:"aria-label,attr"`
	Paths   []struct {
		D    string `xml:"d,attr"`
		Fill string `xml:"fill,attr"`
	} `xml:"path"`
}

// modules reads the path back into a grid of dark modules.
func modules(t *testing.T, doc svgDoc, n int) [][]bool {
	t.Helper()
	grid := make([][]bool, n)
	for i := range grid {
		grid[i] = make([]bool, n)
	}
	if len(doc.Paths) != 1 {
		t.Fatalf("%d paths, want 1", len(doc.Paths))
	}
	for _, cmd := range strings.Split(doc.Paths[0].D, "z") {
		if cmd == "" {
			continue
		}
		var x, y, w, w2 int
		if _, err := fmt.Sscanf(cmd, "M%d %dh%dv1h-%d", &x, &y, &w, &w2); err != nil || w != w2 || w < 1 {
			t.Fatalf("unexpected path command %q: %v", cmd, err)
		}
		for i := x; i < x+w; i++ {
			if y < 0 || y >= n || i < 0 || i >= n {
				t.Fatalf("module (%d,%d) outside the image", i, y)
			}
			grid[y][i] = true
		}
	}
	return grid
}

func TestSVG(t *testing.T) {
	tests := []struct {
		name string
		text string
		size int // modules without the quiet zone; 0 to skip
	}{
		{"version 1 alphanumeric", "HELLO WORLD", 21},
		{"version 2 bytes", "https://example.com/abcdef", 25},
		{"otpauth URL", "otpauth://totp/Wharf:alice%40example.com?algorithm=SHA1&digits=6&issuer=Wharf&period=30&secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", 0},
		{"markup in text", `<script>alert("x")</script>`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := SVG(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			s := string(out)
			for _, bad := range []string{"style=", "<script", "<style"} {
				if strings.Contains(strings.ToLower(s), bad) {
					t.Fatalf("output contains %q", bad)
				}
			}
			var doc svgDoc
			if err := xml.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("not XML: %v", err)
			}
			if doc.XMLName.Space != "http://www.w3.org/2000/svg" || doc.Role != "img" || doc.Label == "" {
				t.Fatalf("svg element %+v", doc)
			}
			want, err := qr.Encode(tt.text, qr.M)
			if err != nil {
				t.Fatal(err)
			}
			if tt.size != 0 && want.Size != tt.size {
				t.Fatalf("QR size %d, want %d", want.Size, tt.size)
			}
			n := want.Size + 2*quiet
			if doc.ViewBox != fmt.Sprintf("0 0 %d %d", n, n) {
				t.Fatalf("viewBox %q, want %d square", doc.ViewBox, n)
			}
			grid := modules(t, doc, n)
			for y := 0; y < n; y++ {
				for x := 0; x < n; x++ {
					dark := want.Black(x-quiet, y-quiet)
					if grid[y][x] != dark {
						t.Fatalf("module (%d,%d) dark=%v, want %v", x, y, grid[y][x], dark)
					}
				}
			}
		})
	}
}

func TestSVGTooLong(t *testing.T) {
	if _, err := SVG(strings.Repeat("x", 5000)); err == nil {
		t.Fatal("text beyond QR capacity accepted")
	}
}
