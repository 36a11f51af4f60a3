package mime

import (
	"bytes"
	"fmt"
	"io"

	"wharf/internal/protocol/as2/cms"
)

// inflateLimit is how far a compressed layer of size bytes may inflate: the
// absolute limit, and past the floor the ratio times its size.
func (o UnpackOptions) inflateLimit(size int64) int64 {
	limit := o.MaxDecompressedSize
	if limit <= 0 {
		limit = DefaultMaxDecompressedSize
	}
	ratio := int64(o.ratio())
	if size >= 0 && size <= (limit-decompressionFloor)/ratio {
		limit = min(limit, decompressionFloor+ratio*size)
	}
	return limit
}

func (o UnpackOptions) ratio() int {
	if o.MaxDecompressionRatio <= 0 {
		return DefaultMaxDecompressionRatio
	}
	return o.MaxDecompressionRatio
}

// unmet names the first demanded protection res does not carry (yet).
func (o UnpackOptions) unmet(res *Result) error {
	switch {
	case o.RequireSigned && !res.Signed:
		return fmt.Errorf("%w: the message is not signed, and signed messages are required", cms.ErrInsufficientSecurity)
	case o.RequireEncrypted && !res.Encrypted:
		return fmt.Errorf("%w: the message is not encrypted, and encrypted messages are required", cms.ErrInsufficientSecurity)
	}
	return nil
}

// isLayer reports whether a media type is one Unpack opens as a further
// protection layer rather than taking it as the document.
func isLayer(mediaType string) bool {
	switch mediaType {
	case "multipart/signed", "application/pkcs7-mime", "application/x-pkcs7-mime":
		return true
	}
	return false
}

// layerGuard passes an inflating layer through to w while it watches the
// layer's header section: once that is complete and names no further layer,
// the content is the document, and a demanded protection that no layer
// supplied yet can no longer come, so the layer is refused with refuse rather
// than inflated to its end. A header section that does not end within
// maxHeaderBytes is left for ParseEntity to refuse.
type layerGuard struct {
	w       io.Writer
	refuse  error
	head    []byte
	decided bool
}

func (g *layerGuard) Write(p []byte) (int, error) {
	if !g.decided {
		g.head = append(g.head, p[:min(len(p), maxHeaderBytes-len(g.head))]...)
		end, complete := headerEnd(g.head)
		switch {
		case complete:
			g.decided = true
			e, err := ParseEntity(g.head[:end])
			if err != nil {
				break
			}
			if mt, _, err := e.MediaType(); err == nil && !isLayer(mt) {
				return 0, g.refuse
			}
		case len(g.head) >= maxHeaderBytes:
			g.decided = true
		}
		if g.decided {
			g.head = nil
		}
	}
	return g.w.Write(p)
}

// headerEnd finds the blank line that ends a header section, with CRLF or
// bare LF line endings, and returns the offset just past it.
func headerEnd(b []byte) (int, bool) {
	for _, lead := range [][]byte{[]byte("\r\n"), []byte("\n")} {
		if bytes.HasPrefix(b, lead) {
			return len(lead), true
		}
	}
	best := -1
	for _, sep := range [][]byte{[]byte("\n\r\n"), []byte("\n\n")} {
		if i := bytes.Index(b, sep); i >= 0 && (best < 0 || i+len(sep) < best) {
			best = i + len(sep)
		}
	}
	return best, best >= 0
}
