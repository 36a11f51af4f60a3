package mime

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"net/textproto"
	"strings"
	"time"

	"wharf/internal/protocol/as2/cms"
)

// Disposition is an MDN's Disposition field (RFC 8098 3.2.6 as AS2 uses it,
// RFC 4130 7.5.3): "automatic-action/MDN-sent-automatically; processed" or
// with a modifier such as "processed/error: decryption-failed".
type Disposition struct {
	ActionMode  string // "automatic-action"
	SendingMode string // "MDN-sent-automatically"
	Type        string // "processed" or "failed"
	// Modifier is what follows the type's slash, e.g. "error:
	// decryption-failed" or "warning: duplicate-document"; empty for a
	// plain "processed".
	Modifier string
}

// Processed is the disposition of a message taken without reservation.
func Processed() Disposition {
	return Disposition{ActionMode: "automatic-action", SendingMode: "MDN-sent-automatically", Type: "processed"}
}

// ProcessedWith is "processed/<kind>: <description>" (kind "error" or
// "warning").
func ProcessedWith(kind, description string) Disposition {
	d := Processed()
	d.Modifier = kind + ": " + description
	return d
}

// String formats the field value.
func (d Disposition) String() string {
	s := d.ActionMode + "/" + d.SendingMode + "; " + d.Type
	if d.Modifier != "" {
		s += "/" + d.Modifier
	}
	return s
}

// Successful reports a processed disposition without an error or failure
// modifier (a warning still counts as success).
func (d Disposition) Successful() bool {
	if !strings.EqualFold(d.Type, "processed") {
		return false
	}
	kind, _, _ := strings.Cut(d.Modifier, ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	return kind == "" || kind == "warning"
}

// ModifierKind is "error", "warning", "failure" or "" from the modifier.
func (d Disposition) ModifierKind() string {
	kind, _, _ := strings.Cut(d.Modifier, ":")
	return strings.ToLower(strings.TrimSpace(kind))
}

// ModifierText is the description after the modifier's colon.
func (d Disposition) ModifierText() string {
	_, text, _ := strings.Cut(d.Modifier, ":")
	return strings.TrimSpace(text)
}

// ParseDisposition reads a Disposition value in any letter case. Types and
// modes are lower-cased except the sending mode's conventional spelling.
func ParseDisposition(s string) (Disposition, error) {
	modes, rest, ok := strings.Cut(s, ";")
	if !ok {
		return Disposition{}, fmt.Errorf("%w: disposition %q", ErrMalformed, s)
	}
	action, sending, ok := strings.Cut(strings.TrimSpace(modes), "/")
	if !ok {
		return Disposition{}, fmt.Errorf("%w: disposition modes %q", ErrMalformed, modes)
	}
	typ, modifier, _ := strings.Cut(strings.TrimSpace(rest), "/")
	d := Disposition{
		ActionMode:  strings.ToLower(strings.TrimSpace(action)),
		SendingMode: strings.TrimSpace(sending),
		Type:        strings.ToLower(strings.TrimSpace(typ)),
		Modifier:    strings.TrimSpace(modifier),
	}
	if d.ActionMode == "" || d.SendingMode == "" || d.Type == "" {
		return Disposition{}, fmt.Errorf("%w: disposition %q", ErrMalformed, s)
	}
	return d, nil
}

// MDN is the content of a message disposition notification.
type MDN struct {
	ReportingUA string
	// OriginalRecipient and FinalRecipient are AS2 identifiers, written with
	// the rfc822 address type as AS2 products expect.
	OriginalRecipient string
	FinalRecipient    string
	OriginalMessageID string
	Disposition       Disposition
	// ReceivedContentMIC is nil when the MDN carries none.
	ReceivedContentMIC *MIC
	// Text is the human-readable part.
	Text string
}

// MDNBuildOptions chooses how an MDN is written.
type MDNBuildOptions struct {
	// Sign makes a signed MDN (multipart/signed); nil writes it unsigned.
	Sign *Signer

	newBoundary func() string
}

// BuildMDN writes an MDN and returns its Content-Type and body.
func BuildMDN(m MDN, opts MDNBuildOptions) (contentType string, body []byte, err error) {
	if opts.newBoundary == nil {
		opts.newBoundary = randomBoundary
	}
	if m.OriginalMessageID == "" {
		return "", nil, errors.New("build MDN: no original message id")
	}
	if m.Disposition.Type == "" {
		m.Disposition = Processed()
	}
	fields := [][2]string{}
	if m.ReportingUA != "" {
		fields = append(fields, [2]string{"Reporting-UA", m.ReportingUA})
	}
	if m.OriginalRecipient != "" {
		fields = append(fields, [2]string{"Original-Recipient", "rfc822; " + m.OriginalRecipient})
	}
	final := m.FinalRecipient
	if final == "" {
		final = m.OriginalRecipient
	}
	if final != "" {
		fields = append(fields, [2]string{"Final-Recipient", "rfc822; " + final})
	}
	fields = append(fields,
		[2]string{"Original-Message-ID", m.OriginalMessageID},
		[2]string{"Disposition", m.Disposition.String()})
	if m.ReceivedContentMIC != nil && len(m.ReceivedContentMIC.Digest) > 0 {
		fields = append(fields, [2]string{"Received-Content-MIC", m.ReceivedContentMIC.String()})
	}
	text := m.Text
	if text == "" {
		text = defaultMDNText(m)
	}
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")

	boundary := opts.newBoundary()
	var b bytes.Buffer
	b.WriteString("--" + boundary + "\r\n")
	b.Write(buildEntity([][2]string{
		{"Content-Type", "text/plain; charset=us-ascii"},
		{"Content-Transfer-Encoding", "7bit"},
	}, []byte(strings.TrimRight(text, "\r\n")+"\r\n")))
	b.WriteString("\r\n--" + boundary + "\r\n")
	b.Write(buildEntity([][2]string{
		{"Content-Type", "message/disposition-notification"},
		{"Content-Transfer-Encoding", "7bit"},
	}, buildEntity(fields, nil)))
	b.WriteString("--" + boundary + "--\r\n")
	report := buildEntity([][2]string{{
		"Content-Type",
		fmt.Sprintf(`multipart/report; report-type=disposition-notification; boundary="%s"`, boundary),
	}}, b.Bytes())

	entity := report
	if opts.Sign != nil {
		if entity, err = signEntity(report, opts.Sign, opts.newBoundary); err != nil {
			return "", nil, err
		}
	}
	e, err := ParseEntity(entity)
	if err != nil {
		return "", nil, err
	}
	return e.Header.Get("Content-Type"), e.Body, nil
}

func defaultMDNText(m MDN) string {
	if m.Disposition.Successful() {
		return fmt.Sprintf("The message %s was received and processed.", m.OriginalMessageID)
	}
	return fmt.Sprintf("The message %s was received but could not be processed: %s.",
		m.OriginalMessageID, m.Disposition.ModifierText())
}

// MDNParseOptions carries what ParseMDN needs to verify a signed MDN.
type MDNParseOptions struct {
	// PartnerCertificates verify the MDN's signature.
	PartnerCertificates []*x509.Certificate
	AllowSHA1           bool
	VerifyTime          time.Time
	// RequireSigned refuses an unsigned MDN with cms.ErrAuthentication.
	RequireSigned bool
}

// ReceivedMDN is a parsed MDN from a partner.
type ReceivedMDN struct {
	MDN
	Signed bool
	// Signer is the verified signature; nil when unsigned.
	Signer *cms.SignerInfo
	// Fields are all fields of the disposition-notification part.
	Fields textproto.MIMEHeader
	// RawMIC is the Received-Content-MIC value as written, "" when absent.
	// When it is present but ReceivedContentMIC is nil, it could not be
	// read.
	RawMIC string
}

// ParseMDN reads an MDN from its Content-Type and body (the HTTP response of
// a synchronous MDN or the body of an asynchronous one), verifying its
// signature when it is signed. A preamble before the first boundary, a
// base64 or binary signature part and a signature without the signer's
// certificate are all accepted.
func ParseMDN(contentType string, body []byte, opts MDNParseOptions) (*ReceivedMDN, error) {
	mt, params, err := parseMediaType(contentType)
	if err != nil {
		return nil, err
	}
	out := &ReceivedMDN{}
	reportBody, reportParams := body, params
	if mt == "multipart/signed" {
		signed, sig, err := signedParts(&Entity{Body: body}, params)
		if err != nil {
			return nil, err
		}
		out.Signed = true
		info, signedBytes, err := verify(sig, signed, UnpackOptions{
			PartnerCertificates: opts.PartnerCertificates, AllowSHA1: opts.AllowSHA1, VerifyTime: opts.VerifyTime,
		})
		out.Signer = info
		if err != nil {
			return out, err
		}
		inner, err := ParseEntity(signedBytes)
		if err != nil {
			return out, err
		}
		if mt, reportParams, err = inner.MediaType(); err != nil {
			return out, err
		}
		if reportBody, err = inner.Content(); err != nil {
			return out, err
		}
	} else if opts.RequireSigned {
		return out, fmt.Errorf("%w: the MDN is not signed", cms.ErrAuthentication)
	}
	if mt != "multipart/report" {
		return out, fmt.Errorf("%w: %s", ErrNotMDN, mt)
	}
	parts, err := splitMultipart(reportBody, reportParams["boundary"])
	if err != nil {
		return out, err
	}
	for _, p := range parts {
		e, err := ParseEntity(p)
		if err != nil {
			return out, err
		}
		pmt, _, err := e.MediaType()
		if err != nil {
			return out, err
		}
		content, err := e.Content()
		if err != nil {
			return out, err
		}
		switch {
		case pmt == "message/disposition-notification" && out.Fields == nil:
			if err := out.readFields(content); err != nil {
				return out, err
			}
		case pmt == "text/plain" && out.Text == "":
			out.Text = string(content)
		}
	}
	if out.Fields == nil {
		return out, fmt.Errorf("%w: no message/disposition-notification part", ErrNotMDN)
	}
	return out, nil
}

func (m *ReceivedMDN) readFields(content []byte) error {
	// The fields are a header section; a trailing blank line may be absent.
	e, err := ParseEntity(append(bytes.TrimRight(content, "\r\n"), "\r\n\r\n"...))
	if err != nil {
		return err
	}
	m.Fields = e.Header
	m.ReportingUA = e.Header.Get("Reporting-Ua")
	m.OriginalRecipient = stripAddressType(e.Header.Get("Original-Recipient"))
	m.FinalRecipient = stripAddressType(e.Header.Get("Final-Recipient"))
	m.OriginalMessageID = strings.TrimSpace(e.Header.Get("Original-Message-Id"))
	d, err := ParseDisposition(e.Header.Get("Disposition"))
	if err != nil {
		return err
	}
	m.Disposition = d
	if raw := strings.TrimSpace(e.Header.Get("Received-Content-Mic")); raw != "" {
		// A MIC we cannot read (an unknown algorithm) leaves
		// ReceivedContentMIC nil, so it matches nothing, while the rest of
		// the MDN is still reported.
		m.RawMIC = raw
		if mic, err := ParseMIC(raw); err == nil {
			m.ReceivedContentMIC = &mic
		}
	}
	return nil
}

// stripAddressType turns "rfc822; PEER" into "PEER".
func stripAddressType(v string) string {
	if _, addr, ok := strings.Cut(v, ";"); ok {
		return strings.TrimSpace(addr)
	}
	return strings.TrimSpace(v)
}
