package receiver

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// MDNMode is the kind of receipt a partner asked for.
type MDNMode string

const (
	MDNNone  MDNMode = "none"
	MDNSync  MDNMode = "sync"
	MDNAsync MDNMode = "async"
)

// envelope is what the request's header fields say, read before the body.
type envelope struct {
	from, to   profile.AS2ID
	messageID  string
	version    string
	mode       MDNMode
	asyncURL   string // for MDNAsync
	options    mime.DispositionOptions
	software   string
	features   string
	contentLen int64 // -1 when unknown (chunked)
}

// signedReceipt reports whether the partner asked for a signed MDN.
func (e envelope) signedReceipt() bool { return e.mode != MDNNone && e.options.SignedReceipt() }

// headerError is a request refused for its header fields: answered 400 with its text.
type headerError struct{ msg string }

func (e *headerError) Error() string { return e.msg }

func badHeader(format string, args ...any) error {
	return &headerError{msg: fmt.Sprintf(format, args...)}
}

// maxMessageIDLength is RFC 5322's line limit; a longer id is refused, not cut.
const maxMessageIDLength = 998

// readEnvelope reads and checks the AS2 header fields. Names are matched in any case and
// values trimmed; net/http has already joined folded lines.
func readEnvelope(h http.Header, contentLength int64) (envelope, error) {
	var e envelope
	var err error
	// The Message-ID comes first, so that a refusal's log line names it.
	e.messageID = strings.TrimSpace(h.Get("Message-Id"))
	switch {
	case e.messageID == "":
		return e, badHeader("the Message-ID header is missing")
	case len(e.messageID) > maxMessageIDLength:
		e.messageID = ""
		return e, badHeader("the Message-ID header is longer than %d bytes", maxMessageIDLength)
	case !printable(e.messageID):
		e.messageID = ""
		return e, badHeader("the Message-ID header contains characters outside printable ASCII")
	}
	if e.from, err = parseAS2ID("AS2-From", h.Get("AS2-From")); err != nil {
		return e, err
	}
	if e.to, err = parseAS2ID("AS2-To", h.Get("AS2-To")); err != nil {
		return e, err
	}
	if e.from == e.to {
		return e, badHeader("AS2-From and AS2-To both name %q: a party cannot send to itself", e.from)
	}
	e.version = strings.TrimSpace(h.Get("AS2-Version"))
	switch e.version {
	case "":
		// RFC 4130 6.1: a message without the field is AS2 1.0.
		e.version = "1.0"
	case "1.0", "1.1", "1.2", "1.3":
	default:
		return e, badHeader("AS2-Version %q is not supported (1.0 to 1.3 are)", truncate(e.version, 16))
	}
	e.options = mime.ParseDispositionOptions(h.Get("Disposition-Notification-Options"))
	e.mode = MDNNone
	if strings.TrimSpace(h.Get("Disposition-Notification-To")) != "" {
		e.mode = MDNSync
		if rdo := strings.TrimSpace(h.Get("Receipt-Delivery-Option")); rdo != "" {
			e.mode = MDNAsync
			e.asyncURL = rdo
		}
	}
	e.software = firstNonEmpty(h.Get("User-Agent"), h.Get("Server"))
	e.features = strings.TrimSpace(h.Get("EDIINT-Features"))
	e.contentLen = contentLength
	return e, nil
}

// parseAS2ID reads an AS2-From or AS2-To value (RFC 4130 6.2), quoted when it holds
// spaces or specials; the id itself is checked by profile.ParseAS2ID, as profiles are.
func parseAS2ID(field, v string) (profile.AS2ID, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", badHeader("the %s header is missing", field)
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		var b strings.Builder
		inner := v[1 : len(v)-1]
		for i := 0; i < len(inner); i++ {
			c := inner[i]
			if c == '\\' && i+1 < len(inner) {
				i++
				c = inner[i]
			} else if c == '"' {
				return "", badHeader("%s %q has an unescaped quote", field, truncate(v, 40))
			}
			b.WriteByte(c)
		}
		v = b.String()
	}
	id, err := profile.ParseAS2ID(v)
	if err != nil {
		return "", badHeader("%s: %v", field, err)
	}
	return id, nil
}

// quoteAS2ID writes an AS2 id for a header field, quoted when RFC 4130 requires it.
func quoteAS2ID(s string) string {
	if !strings.ContainsAny(s, " \t\"\\()<>@,;:/[]?=") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			return truncate(v, 256)
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// checkAsyncURL accepts a Receipt-Delivery-Option the partner's profile vouches for: an
// http or https URL whose host is the host of the partner's endpoint URL or one of its
// async_mdn_hosts (an entry with a port must match the port too). Anything else would
// let whoever can reach our listener make us post to a host of their choosing.
func checkAsyncURL(raw string, remote profile.Remote) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return "", badHeader("Receipt-Delivery-Option %q is not an http or https URL; asynchronous MDNs are sent over HTTP only", truncate(raw, 80))
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	var vouched []string
	if ep, err := url.Parse(remote.EndpointURL); err == nil && ep.Hostname() != "" {
		vouched = append(vouched, strings.ToLower(ep.Hostname()))
	}
	for _, h := range remote.AsyncMDNHosts {
		vouched = append(vouched, strings.ToLower(strings.TrimSpace(h)))
	}
	ok := slices.ContainsFunc(vouched, func(v string) bool {
		if vh, vp, err := net.SplitHostPort(v); err == nil {
			return strings.Trim(vh, "[]") == host && vp == port
		}
		return strings.Trim(v, "[]") == host
	})
	if !ok {
		// Products often ship with a default such as localhost, so the answer says where
		// the host is allowed rather than only that it is not.
		return "", badHeader("Receipt-Delivery-Option names host %q, which is not the host of the partner's endpoint URL "+
			"and not in async_mdn_hosts of the partner's AS2 profile; correct the async MDN URL the partner sends, "+
			"or add %q to async_mdn_hosts if MDNs should go there", host, host)
	}
	u.Fragment = ""
	return u.String(), nil
}

// readBody reads a whole body (an MDN) into memory, at most limit bytes: one more byte
// tells a body that is too large from one that is exactly at the limit.
func readBody(r io.Reader, contentLength, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	if contentLength > 0 && contentLength <= limit {
		// ReadFrom wants MinRead bytes free before it sees the end.
		buf.Grow(int(contentLength) + bytes.MinRead)
	}
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, errBodyTooLarge
	}
	return buf.Bytes(), nil
}

// credentialHeaders carry secrets (of a proxy or a partner's HTTP authentication) that
// the headers stage must not keep.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// headerText renders the request line and header fields for the headers payload stage,
// fields sorted by name since net/http does not keep their order.
func headerText(r *http.Request) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s %s\r\n", r.Method, r.URL.RequestURI(), r.Proto)
	if r.Host != "" {
		fmt.Fprintf(&b, "Host: %s\r\n", r.Host)
	}
	if r.ContentLength >= 0 && r.Header.Get("Content-Length") == "" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", r.ContentLength)
	}
	if len(r.TransferEncoding) > 0 {
		fmt.Fprintf(&b, "Transfer-Encoding: %s\r\n", strings.Join(r.TransferEncoding, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Header)) {
		for _, v := range r.Header[k] {
			if slices.Contains(credentialHeaders, k) {
				v = "[redacted]"
			}
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	return b.Bytes()
}
