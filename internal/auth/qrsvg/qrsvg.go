// Package qrsvg draws QR codes as inline SVG, so an enrolment page can show
// one without an image endpoint, inline styles or script.
package qrsvg

import (
	"fmt"
	"html/template"
	"strings"

	"rsc.io/qr"
)

const (
	// quiet is the blank margin in modules that readers need around a code.
	quiet = 4
	// scale is the default rendered size of one module in CSS pixels; a
	// stylesheet may resize the image, and the viewBox keeps it sharp.
	scale = 4
	// label is the accessible name of the image.
	label = "QR code to scan with an authenticator app"
)

// SVG encodes text as a QR code with error correction level M and returns it
// as an <svg> element: a white background and one black <path> made of a
// rectangle for each horizontal run of dark modules. Colours and crisp edges
// are set with presentation attributes, which a CSP forbidding inline styles
// does not block.
func SVG(text string) (template.HTML, error) {
	code, err := qr.Encode(text, qr.M)
	if err != nil {
		return "", fmt.Errorf("qrsvg: encode: %w", err)
	}
	n := code.Size + 2*quiet
	var d strings.Builder
	for y := 0; y < code.Size; y++ {
		for x := 0; x < code.Size; {
			if !code.Black(x, y) {
				x++
				continue
			}
			start := x
			for x < code.Size && code.Black(x, y) {
				x++
			}
			fmt.Fprintf(&d, "M%d %dh%dv1h-%dz", start+quiet, y+quiet, x-start, x-start)
		}
	}
	svg := fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s" shape-rendering="crispEdges">`+
		`<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="%s"/></svg>`,
		n, n, n*scale, n*scale, label, n, n, d.String())
	// The markup is built only from numbers and constants, never from text.
	return template.HTML(svg), nil
}
