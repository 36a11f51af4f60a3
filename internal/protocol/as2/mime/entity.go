package mime

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	gomime "mime"
	"mime/quotedprintable"
	"net/textproto"
	"strings"
)

const maxHeaderBytes = 64 << 10

// Entity is one MIME entity as received: its header fields and its body,
// still transfer-encoded.
type Entity struct {
	Header textproto.MIMEHeader
	// Body is the content after the blank line, byte for byte.
	Body []byte
	// Raw is the whole entity, header section included, byte for byte.
	Raw []byte
}

// ParseEntity splits raw into header fields and body. It accepts CRLF and
// bare LF line endings, folded fields and field names in any case. A header
// section without the blank line that ends it leaves the body empty.
func ParseEntity(raw []byte) (*Entity, error) {
	h := textproto.MIMEHeader{}
	var name string
	pos := 0
	for {
		if pos > maxHeaderBytes {
			return nil, fmt.Errorf("%w: header section longer than %d bytes", ErrMalformed, maxHeaderBytes)
		}
		if pos >= len(raw) {
			return &Entity{Header: h, Body: raw[len(raw):], Raw: raw}, nil
		}
		end := bytes.IndexByte(raw[pos:], '\n')
		next := len(raw)
		line := raw[pos:]
		if end >= 0 {
			line = raw[pos : pos+end]
			next = pos + end + 1
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		pos = next
		if len(line) == 0 {
			return &Entity{Header: h, Body: raw[pos:], Raw: raw}, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			if name == "" {
				return nil, fmt.Errorf("%w: continuation line before any field", ErrMalformed)
			}
			vals := h[name]
			vals[len(vals)-1] += string(line)
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return nil, fmt.Errorf("%w: header line without a field name", ErrMalformed)
		}
		name = textproto.CanonicalMIMEHeaderKey(string(bytes.TrimSpace(line[:colon])))
		h[name] = append(h[name], strings.TrimLeft(string(line[colon+1:]), " \t"))
	}
}

// MediaType returns the lower-cased media type and its parameters (names
// lower-cased). A missing Content-Type is text/plain, as RFC 2045 says.
func (e *Entity) MediaType() (string, map[string]string, error) {
	return parseMediaType(e.Header.Get("Content-Type"))
}

func parseMediaType(v string) (string, map[string]string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "text/plain", map[string]string{}, nil
	}
	mt, params, err := gomime.ParseMediaType(v)
	if err != nil && mt == "" {
		return "", nil, fmt.Errorf("%w: Content-Type %q: %w", ErrMalformed, v, err)
	}
	if params == nil {
		params = map[string]string{}
	}
	return strings.ToLower(mt), params, nil
}

// Content returns the body decoded per the entity's
// Content-Transfer-Encoding.
func (e *Entity) Content() ([]byte, error) {
	return DecodeTransferEncoding(e.Header.Get("Content-Transfer-Encoding"), e.Body)
}

// FileName returns the filename parameter of Content-Disposition as sent,
// or "" when there is none.
func (e *Entity) FileName() string {
	cd := e.Header.Get("Content-Disposition")
	if cd == "" {
		return ""
	}
	_, params, err := gomime.ParseMediaType(cd)
	if err != nil || params == nil {
		return fileNameFallback(cd)
	}
	return params["filename"]
}

// fileNameFallback digs a quoted or bare filename out of a disposition
// that the strict parser refuses (duplicate or stray parameters).
func fileNameFallback(cd string) string {
	for _, p := range strings.Split(cd, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "filename") {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}

// DecodeTransferEncoding decodes body per a Content-Transfer-Encoding value:
// base64 and quoted-printable are decoded, 7bit, 8bit, binary and none pass
// as they are, anything else is ErrTransferEncoding.
func DecodeTransferEncoding(cte string, body []byte) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "", "7bit", "8bit", "binary":
		return body, nil
	case "base64":
		clean := make([]byte, 0, len(body))
		for _, c := range body {
			switch c {
			case ' ', '\t', '\r', '\n':
			default:
				clean = append(clean, c)
			}
		}
		return decodeBase64(clean)
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
		if err != nil {
			return nil, fmt.Errorf("%w: quoted-printable: %w", ErrTransferEncoding, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrTransferEncoding, cte)
}

// decodeBase64 decodes padded base64 and, as some partners send it, base64
// with its padding left off or cut short. Each attempt gets a buffer sized
// for its own encoding: the unpadded form decodes to more bytes than
// StdEncoding.DecodedLen reserves for the same input length.
func decodeBase64(clean []byte) ([]byte, error) {
	out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
	n, err := base64.StdEncoding.Decode(out, clean)
	if err == nil {
		return out[:n], nil
	}
	raw := bytes.TrimRight(clean, "=")
	out = make([]byte, base64.RawStdEncoding.DecodedLen(len(raw)))
	n, err = base64.RawStdEncoding.Decode(out, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: base64: %w", ErrTransferEncoding, err)
	}
	return out[:n], nil
}

// splitMultipart returns each body part of a multipart body byte for byte:
// what lies between a delimiter line and the line break before the next
// delimiter. The preamble and epilogue are dropped.
func splitMultipart(body []byte, boundary string) ([][]byte, error) {
	if boundary == "" {
		return nil, fmt.Errorf("%w: multipart without a boundary", ErrMalformed)
	}
	delim := []byte("--" + boundary)
	var parts [][]byte
	start := -1 // where the current part's content begins
	for pos := 0; pos < len(body); {
		i := bytes.Index(body[pos:], delim)
		if i < 0 {
			break
		}
		i += pos
		after := i + len(delim)
		pos = after
		if i > 0 && body[i-1] != '\n' {
			continue // not at the start of a line
		}
		closing := bytes.HasPrefix(body[after:], []byte("--"))
		lineEnd := bytes.IndexByte(body[after:], '\n')
		if !closing {
			rest := body[after:]
			if lineEnd >= 0 {
				rest = rest[:lineEnd]
			}
			if len(bytes.Trim(rest, " \t\r")) != 0 {
				continue // a longer boundary that starts with ours
			}
		}
		if start >= 0 {
			end := i
			if end > start && body[end-1] == '\n' {
				end--
				if end > start && body[end-1] == '\r' {
					end--
				}
			}
			parts = append(parts, body[start:end])
		}
		if closing {
			return parts, nil
		}
		if lineEnd < 0 {
			break
		}
		start = after + lineEnd + 1
		pos = start
	}
	return nil, fmt.Errorf("%w: multipart body without its closing delimiter", ErrMalformed)
}
