package sender

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	gomime "mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// as2Version is the AS2 version we speak: 1.2 announces EDIINT-Features support (RFC
// 6017) and compression (RFC 5402).
const as2Version = "1.2"

// ediintFeatures is what Wharf supports of the registered EDIINT features (RFC 6017):
// AS2-Reliability, as the sender keeps a Message-ID across retries and the receiver
// answers a repeated Message-ID with its first MDN, byte for byte, storing nothing.
// Multiple attachments and CEM are not supported and not claimed.
const ediintFeatures = "AS2-Reliability"

// headerParams are the AS2 fields of one request.
type headerParams struct {
	MessageID string
	From, To  profile.AS2ID
	Subject   string
	Date      time.Time
	MDNMode   profile.MDNMode
	SignedMDN bool
	// MICAlgorithm is the signed-receipt-micalg asked for with a signed receipt.
	MICAlgorithm cms.DigestAlgorithm
	// NotifyTo is the Disposition-Notification-To value.
	NotifyTo string
	// AsyncURL is the Receipt-Delivery-Option of an async receipt.
	AsyncURL string
}

// requestHeader assembles the HTTP header of an AS2 request: the AS2 fields and the
// built message's MIME fields (its Content-Type and the others). Field names keep the
// spelling AS2 products write, since a few compare them case-sensitively.
func requestHeader(contentType string, fields http.Header, p headerParams) http.Header {
	h := http.Header{}
	set := func(name, value string) { h[name] = []string{headerValue(value)} }
	set("AS2-Version", as2Version)
	set("EDIINT-Features", ediintFeatures)
	set("AS2-From", quoteAS2ID(p.From))
	set("AS2-To", quoteAS2ID(p.To))
	set("Message-ID", p.MessageID)
	set("Subject", p.Subject)
	set("Date", p.Date.UTC().Format(time.RFC1123Z))
	set("MIME-Version", "1.0")
	set("Content-Type", contentType)
	for k, v := range fields {
		if len(v) > 0 {
			set(k, v[0])
		}
	}
	if p.MDNMode == profile.MDNSync || p.MDNMode == profile.MDNAsync {
		set("Disposition-Notification-To", p.NotifyTo)
		if p.SignedMDN {
			set("Disposition-Notification-Options", fmt.Sprintf(
				"signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, %s",
				p.MICAlgorithm.MICName()))
		}
		if p.MDNMode == profile.MDNAsync {
			set("Receipt-Delivery-Option", p.AsyncURL)
		}
	}
	return h
}

// setBody gives req the built message as its body, with its length, and a GetBody that
// makes it again for the transport to resend on a fresh connection. A body the message
// left to be encrypted is encrypted as the transport reads it, each copy by a goroutine of
// its own; stop closes every copy and waits for its goroutine, so none outlives the
// attempt.
func setBody(req *http.Request, b *mime.Built) (stop func()) {
	req.ContentLength = b.BodySize()
	if b.Body != nil {
		open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b.Body)), nil }
		if len(b.Body) == 0 {
			open = func() (io.ReadCloser, error) { return http.NoBody, nil }
		}
		req.Body, _ = open()
		req.GetBody = open
		return func() {}
	}
	return setPipeBody(req, b.WriteBody)
}

// setPipeBody gives req a body that fill writes as the transport reads it, each copy
// (GetBody makes one for a resend on a fresh connection) by a goroutine of its own; stop
// closes every copy and waits for its goroutine.
func setPipeBody(req *http.Request, fill func(io.Writer) error) (stop func()) {
	var (
		mu     sync.Mutex
		bodies []*pipeBody
	)
	open := func() (io.ReadCloser, error) {
		body := newPipeBody(fill)
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, body)
		return body, nil
	}
	req.Body, _ = open()
	req.GetBody = open
	return func() {
		mu.Lock()
		defer mu.Unlock()
		for _, body := range bodies {
			body.Close()
		}
	}
}

// pipeBody is a request body that fill writes, in a goroutine started by the first Read,
// as the transport reads it. Close ends the goroutine and waits for it; the transport
// closes every body it is given.
type pipeBody struct {
	fill func(io.Writer) error
	pr   *io.PipeReader
	pw   *io.PipeWriter
	done chan struct{}

	mu      sync.Mutex
	started bool
	closed  bool
}

func newPipeBody(fill func(io.Writer) error) *pipeBody {
	pr, pw := io.Pipe()
	return &pipeBody{fill: fill, pr: pr, pw: pw, done: make(chan struct{})}
}

func (p *pipeBody) Read(b []byte) (int, error) {
	p.mu.Lock()
	if !p.started && !p.closed {
		p.started = true
		go func() {
			defer close(p.done)
			p.pw.CloseWithError(p.fill(p.pw))
		}()
	}
	p.mu.Unlock()
	return p.pr.Read(b)
}

// Close fails fill's next write, which ends it, and waits for it.
func (p *pipeBody) Close() error {
	p.mu.Lock()
	p.closed = true
	started := p.started
	p.mu.Unlock()
	p.pr.Close()
	if started {
		<-p.done
	}
	return nil
}

// headerValue keeps a value on one line.
func headerValue(v string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return ' '
		}
		return r
	}, v)
}

// quoteAS2ID writes an AS2 id for AS2-From and AS2-To: in quotes when it holds a space or
// a character RFC 822 treats as special (RFC 4130 6.2). Profiles refuse the quote and the
// backslash, so no escaping is needed.
func quoteAS2ID(id profile.AS2ID) string {
	s := string(id)
	if strings.ContainsAny(s, " \t()<>@,;:\\\".[]") {
		return `"` + s + `"`
	}
	return s
}

// newMessageID makes a Message-ID no other message shares: our ids for the message and
// the delivery, for whoever reads a partner's logs, and 96 random bits.
func newMessageID(domain string, messageID, deliveryID int64) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return fmt.Sprintf("<wharf-%d-%d-%s@%s>", messageID, deliveryID, hex.EncodeToString(b[:]), domain)
}

// messageIDDomain is the configured domain, else the host of the public URL, else
// localhost.
func messageIDDomain(configured, baseURL string) string {
	if configured != "" {
		return configured
	}
	if u, err := url.Parse(baseURL); err == nil && validDomain(u.Hostname()) {
		return u.Hostname()
	}
	return "localhost"
}

// subject names the document for people reading a partner's logs; a name outside ASCII
// is encoded as RFC 2047 asks.
func subject(fileName string, messageID int64) string {
	if fileName == "" {
		return fmt.Sprintf("AS2 message %d", messageID)
	}
	return gomime.QEncoding.Encode("utf-8", "AS2 message "+fileName)
}
