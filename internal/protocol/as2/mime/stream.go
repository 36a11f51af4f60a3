package mime

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"wharf/internal/protocol/as2/cms"
)

// ErrBoundaryInContent ends a streamed multipart/signed whose content turned out to
// hold its boundary. The boundary is 144 random bits, so this does not happen by
// chance; a message built again gets another one.
var ErrBoundaryInContent = errors.New("build: the content holds the multipart boundary")

// Stream is an outbound message built while its body is written, for a payload too
// large to hold: the payload is read, compressed, hashed, signed and encrypted as it
// goes, and nothing holds more than a chunk of it. A compressed layer and a CBC
// envelope are BER with indefinite lengths (see cms.CompressWriter), so the body's
// length is known only at its end. A GCM envelope cannot stream (its tag covers the
// whole content): NewStream refuses it.
//
// The layers, the MICs and the signature are those Build makes; the bytes differ where
// Build writes DER lengths and, for PKCS #1 v1.5, in how the signature is computed (from
// the digest, cms.SignDigestWith, rather than through pkcs7).
type Stream struct {
	// ContentType is the HTTP Content-Type.
	ContentType string
	// Header holds the other MIME fields that travel as HTTP headers.
	Header http.Header

	l        layout
	boundary string // of the multipart/signed; the same for every body written
}

// NewStream prepares a message for fileName; WriteBody then writes its body, as
// often as asked, each time with a fresh content key.
func NewStream(fileName string, opts BuildOptions) (*Stream, error) {
	l, err := newLayout(fileName, opts)
	if err != nil {
		return nil, err
	}
	if e := opts.Encrypt; e != nil && e.Cipher.AEAD() {
		return nil, fmt.Errorf("build: %w: %s envelopes are built in memory, not streamed", cms.ErrUnsupportedAlgorithm, e.Cipher)
	}
	s := &Stream{Header: http.Header{}, l: l}
	if opts.Sign != nil {
		s.boundary = l.opts.newBoundary()
	}
	s.ContentType = httpFields(s.outerFields(), s.Header)
	return s, nil
}

// signedFields are the multipart/signed's header fields.
func (s *Stream) signedFields() [][2]string { return signedFields(s.l.signDigest, s.boundary) }

// outerFields are the header fields of the outermost entity, which travel as HTTP
// headers.
func (s *Stream) outerFields() [][2]string {
	o := s.l.opts
	switch {
	case o.Encrypt != nil:
		return pkcs7MimeFields("enveloped-data", "smime.p7m")
	case s.l.compressLast():
		return pkcs7MimeFields("compressed-data", "smime.p7z")
	case o.Sign != nil:
		return s.signedFields()
	case o.Compress:
		return pkcs7MimeFields("compressed-data", "smime.p7z")
	}
	return s.l.payloadFields
}

// envelopedFields are the header fields of the entity inside the envelope; nil when it
// is the payload's, which are written with the payload.
func (s *Stream) envelopedFields() [][2]string {
	switch {
	case s.l.compressLast() || (s.l.opts.Compress && s.l.opts.Sign == nil):
		return pkcs7MimeFields("compressed-data", "smime.p7z")
	case s.l.opts.Sign != nil:
		return s.signedFields()
	}
	return nil
}

// WriteBody builds the message from the payload read from r and writes the HTTP body
// to w; an encrypted body is encrypted, and written to w, by a goroutine of WriteBody's
// own, never two writes at once and none after WriteBody returns. Once the MICs are computed, known (when not nil) is called with them before the
// body's last byte is written, so that whatever a partner's receipt is checked against
// is recorded before the partner can have the whole message; an error from known ends
// the body. It returns the MICs.
func (s *Stream) WriteBody(w io.Writer, r io.Reader, known func(MICs) error) (MICs, error) {
	o := s.l.opts
	mics, err := s.l.newHasher()
	if err != nil {
		return MICs{}, err
	}
	hold := &holdback{w: w}
	var (
		outer io.Writer = hold // where the signed message (or the payload's entity) goes
		env   *cms.EncryptWriter
		enc   *stage              // encryption, in a goroutine of its own
		after *cms.CompressWriter // compression of the signed message
	)
	if o.Encrypt != nil {
		if env, err = cms.NewEncryptWriter(hold, o.Encrypt.Recipients, o.Encrypt.EncryptOptions); err != nil {
			return MICs{}, fmt.Errorf("build: %w", err)
		}
		enc = newStage(env)
		defer enc.abort()
		outer = enc
		if f := s.envelopedFields(); f != nil {
			if _, err := io.WriteString(outer, entityHeader(f)); err != nil {
				return MICs{}, err
			}
		}
	}
	if s.l.compressLast() {
		if after, err = cms.NewCompressWriter(outer); err != nil {
			return MICs{}, fmt.Errorf("build: %w", err)
		}
		outer = after
		if _, err := io.WriteString(outer, entityHeader(s.signedFields())); err != nil {
			return MICs{}, err
		}
	}
	content := outer
	var tap *signedTap
	if o.Sign != nil {
		if _, err := io.WriteString(outer, "--"+s.boundary+"\r\n"); err != nil {
			return MICs{}, err
		}
		tap = newSignedTap(outer, mics, s.boundary)
		content = tap
	}
	z, err := s.writeContent(content, r, mics)
	if err != nil {
		return MICs{}, err
	}
	// The MIC of a signed message covers the compressed layer inside the
	// signature; an unsigned one's covers the content, and its compressed layer
	// stays open until the MICs are handed over.
	closeFirst := func() error {
		if z == nil {
			return nil
		}
		if err := z.Close(); err != nil {
			return fmt.Errorf("build: %w", err)
		}
		return nil
	}
	if o.Sign != nil {
		if err := closeFirst(); err != nil {
			return MICs{}, err
		}
	}
	out := newMICs(mics, s.l.micAlg, s.l.signDigest)
	if known != nil {
		if err := known(out); err != nil {
			return MICs{}, err
		}
	}
	if o.Sign == nil {
		if err := closeFirst(); err != nil {
			return MICs{}, err
		}
	}
	if o.Sign != nil {
		sg := o.Sign
		sig, err := cms.SignDigestWith(mics.sum(s.l.signDigest), sg.Certificate, sg.Key, sg.Chain, s.l.signDigest, sg.PSS,
			cms.SignOptions{AlgorithmProtection: sg.AlgorithmProtection})
		if err != nil {
			return MICs{}, fmt.Errorf("build: %w", err)
		}
		if _, err := outer.Write(signatureTrailer(s.boundary, sig)); err != nil {
			return MICs{}, err
		}
	}
	if after != nil {
		if err := after.Close(); err != nil {
			return MICs{}, fmt.Errorf("build: %w", err)
		}
	}
	if env != nil {
		if err := enc.Close(); err != nil {
			return MICs{}, err
		}
		if err := env.Close(); err != nil {
			return MICs{}, fmt.Errorf("build: %w", err)
		}
	}
	return out, hold.release()
}

// writeContent writes the payload's entity read from r to w, compressed when
// compression comes first, and feeds the MIC of an unsigned message (a signed one's
// MIC covers what w gets). It returns the compressed layer, for the caller to close.
func (s *Stream) writeContent(w io.Writer, r io.Reader, mics io.Writer) (*cms.CompressWriter, error) {
	o := s.l.opts
	header := entityHeader(s.l.payloadFields)
	var headerMIC, contentMIC io.Writer // nil: the MIC does not cover it here
	if o.Sign == nil {
		contentMIC = mics
		if o.Encrypt != nil {
			headerMIC = mics
		}
	}
	var z *cms.CompressWriter
	if s.l.compressFirst() {
		if o.Sign != nil {
			if _, err := io.WriteString(w, entityHeader(pkcs7MimeFields("compressed-data", "smime.p7z"))); err != nil {
				return nil, err
			}
		}
		var err error
		if z, err = cms.NewCompressWriter(w); err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
		w = z
	}
	plain := !o.Compress && o.Sign == nil && o.Encrypt == nil
	if !plain {
		if _, err := io.WriteString(tee(w, headerMIC), header); err != nil {
			return nil, err
		}
	}
	buf := make([]byte, 256<<10)
	if _, err := io.CopyBuffer(tee(w, contentMIC), onlyReader{r}, buf); err != nil {
		return nil, fmt.Errorf("build: reading the payload: %w", err)
	}
	return z, nil
}

// onlyReader hides a reader's WriterTo, so a copy goes through the buffer given.
type onlyReader struct{ io.Reader }

// tee writes to w and to h when h is not nil.
func tee(w, h io.Writer) io.Writer {
	if h == nil {
		return w
	}
	return io.MultiWriter(h, w)
}

// holdback passes everything on but its last byte, which release writes: a receiver
// cannot have the whole body before the builder says so.
type holdback struct {
	w    io.Writer
	last [1]byte
	held bool
}

func (h *holdback) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if h.held {
		if _, err := h.w.Write(h.last[:]); err != nil {
			return 0, err
		}
		h.held = false
	}
	if len(p) > 1 {
		if _, err := h.w.Write(p[:len(p)-1]); err != nil {
			return 0, err
		}
	}
	h.last[0], h.held = p[len(p)-1], true
	return len(p), nil
}

func (h *holdback) release() error {
	if !h.held {
		return nil
	}
	h.held = false
	_, err := h.w.Write(h.last[:])
	return err
}

// signedTap passes the signed entity on to w, digests it into h, and watches it for
// the multipart boundary, across writes.
type signedTap struct {
	w, h     io.Writer
	boundary []byte
	tail     []byte // the last len(boundary)-1 bytes seen
}

func newSignedTap(w, h io.Writer, boundary string) *signedTap {
	return &signedTap{w: w, h: h, boundary: []byte(boundary), tail: make([]byte, 0, 2*len(boundary))}
}

func (t *signedTap) Write(p []byte) (int, error) {
	keep := len(t.boundary) - 1
	if len(t.tail) > 0 {
		joined := append(t.tail, p[:min(len(p), keep)]...)
		if bytes.Contains(joined, t.boundary) {
			return 0, ErrBoundaryInContent
		}
	}
	if bytes.Contains(p, t.boundary) {
		return 0, ErrBoundaryInContent
	}
	if len(p) >= keep {
		t.tail = append(t.tail[:0], p[len(p)-keep:]...)
	} else {
		t.tail = append(t.tail, p...)
		t.tail = append(t.tail[:0], t.tail[max(0, len(t.tail)-keep):]...)
	}
	_, _ = t.h.Write(p)
	return t.w.Write(p)
}
