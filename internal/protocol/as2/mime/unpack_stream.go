package mime

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/textproto"
	"strings"

	"wharf/internal/protocol/as2/cms"
)

// DefaultMaxAEADSize bounds AES-GCM (AuthEnvelopedData) content that UnpackStream
// opens when the caller sets no bound (see cms.MaxAEADContent).
const DefaultMaxAEADSize = cms.MaxAEADContent

// maxSignaturePart bounds the signature part of a multipart/signed: a signature with
// its certificate chain takes a few kilobytes.
const maxSignaturePart = 1 << 20

// UnpackStream opens an AS2 message read from r in one pass, writing the document to
// payload as it comes out of the layers, so that neither the message nor the document
// is ever held in memory. CBC decryption, decompression and transfer decoding stream;
// the signed part of a multipart/signed is digested as it goes by (with the signature's
// announced micalg, the requested MIC algorithm and SHA-256) and the signature, which
// follows it, is verified against those digests (cms.VerifyDigest). The document is
// therefore written before the verdict: on any error what payload received must be
// discarded. AES-GCM content is held in memory up to opts.MaxAEADSize and refused past
// it. A failure to write payload is ErrIO; a failure to read r is returned as it is.
//
// The Result has no Payload, SignedContent or MICContent: PayloadSize is the
// document's length (payload takes its digest if one is wanted), and MICWith knows only
// the digests computed on the way. When the signature fails on its content digest and the signed part has bare LF line
// endings, Result.RetryCanonical is set: opening the message again with
// opts.CanonicalLineEnds checks the signature over the part's CRLF form.
func UnpackStream(contentType string, header http.Header, r io.Reader, payload io.Writer, opts UnpackOptions) (*Result, error) {
	res, top := newResult(contentType, header)
	s := &streamer{res: res, opts: opts, sink: &sinkWriter{w: payload}}
	err := s.entity(top, nil, r, 0, false)
	if err == nil {
		err = s.finish()
	}
	return res, err
}

// streamer opens one message for UnpackStream.
type streamer struct {
	res  *Result
	opts UnpackOptions
	sink *sinkWriter
	// outer digests the outermost signed part, which the MIC covers.
	outer *digestSet
	// mic digests what the MIC of an unsigned message covers.
	mic     hash.Hash
	micAlg  cms.DigestAlgorithm
	micName string
}

// entity opens an entity whose header section is h (raw as received; nil for the
// request itself) and whose body is read from body. unwrapped says the entity is the
// plaintext of a decrypted or decompressed layer.
func (s *streamer) entity(h textproto.MIMEHeader, raw []byte, body io.Reader, depth int, unwrapped bool) error {
	if depth > maxLayers {
		return fmt.Errorf("%w: more than %d layers", ErrMalformed, maxLayers)
	}
	mt, params, err := parseMediaType(h.Get("Content-Type"))
	if err != nil {
		return err
	}
	switch mt {
	case "multipart/signed":
		return s.signed(params, body, depth)
	case "application/pkcs7-mime", "application/x-pkcs7-mime":
		return s.smime(h, params, body, depth)
	}
	return s.document(h, raw, body, unwrapped)
}

// smime opens an encrypted or compressed layer in a goroutine of its own, which writes
// the layer's plaintext into a pipe that the next layer reads.
func (s *streamer) smime(h textproto.MIMEHeader, params map[string]string, body io.Reader, depth int) error {
	content, err := decodingReader(h.Get("Content-Transfer-Encoding"), body)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(content, 64<<10)
	head, _ := br.Peek(512)
	kind, err := smimeKind(params["smime-type"], head)
	if err != nil {
		return err
	}
	var open func(io.Writer) error
	switch kind {
	case cms.KindEnvelopedData, cms.KindAuthEnvelopedData:
		s.res.Layers = append(s.res.Layers, LayerEncrypted)
		s.res.Encrypted = true
		var info *cms.DecryptInfo
		defer func() {
			if s.res.Decryption == nil {
				s.res.Decryption = info
			}
		}()
		open = func(w io.Writer) error {
			var err error
			info, err = cms.DecryptToBounded(w, br, s.opts.Decryption, s.opts.maxAEAD())
			return err
		}
	case cms.KindCompressedData:
		s.res.Layers = append(s.res.Layers, LayerCompressed)
		s.res.Compressed = true
		open = func(w io.Writer) error { return s.inflate(w, br) }
	default:
		return fmt.Errorf("%w: application/pkcs7-mime with %s", ErrUnsupportedLayer, kind)
	}
	return s.through(open, depth)
}

// errStopped ends a layer's goroutine whose plaintext is no longer read.
var errStopped = errors.New("mime: the next layer stopped reading")

// through runs open, which writes a layer's plaintext, and opens that plaintext as an
// entity while it is written. The layer's own error (a bad padding found at the end, a
// damaged compressed stream) comes first, since a failure of the entity within follows
// from it.
func (s *streamer) through(open func(io.Writer) error, depth int) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := open(pw)
		pw.CloseWithError(err)
		done <- err
	}()
	err := s.inner(pr, depth+1)
	if err == nil {
		_, err = io.Copy(io.Discard, pr)
	}
	pr.CloseWithError(errStopped)
	if lerr := <-done; lerr != nil && !errors.Is(lerr, errStopped) && !errors.Is(err, ErrIO) {
		return lerr
	}
	return err
}

// inner reads an entity's header section from r and opens the entity.
func (s *streamer) inner(r io.Reader, depth int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	raw, err := readHeaderSection(br)
	if err != nil {
		return err
	}
	e, err := ParseEntity(raw)
	if err != nil {
		return err
	}
	return s.entity(e.Header, raw, br, depth, true)
}

// readHeaderSection reads up to and including the blank line that ends a header
// section (or to the end of r), at most maxHeaderBytes.
func readHeaderSection(br *bufio.Reader) ([]byte, error) {
	var raw []byte
	for {
		line, err := br.ReadSlice('\n')
		raw = append(raw, line...)
		if len(raw) > maxHeaderBytes {
			return nil, fmt.Errorf("%w: header section longer than %d bytes", ErrMalformed, maxHeaderBytes)
		}
		switch {
		case err == io.EOF:
			return raw, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return nil, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return raw, nil
		}
	}
}

// signed digests the first part of a multipart/signed while opening it, then verifies
// the signature of the second part against the digests.
func (s *streamer) signed(params map[string]string, body io.Reader, depth int) error {
	parts, err := newPartScanner(body, params["boundary"])
	if err != nil {
		return err
	}
	s.res.Layers = append(s.res.Layers, LayerSigned)
	s.res.Signed = true
	ds := s.digests(params["micalg"])
	if s.outer == nil {
		s.outer = ds
	}
	if ok, err := parts.next(); err != nil || !ok {
		return signedPartsError(err, 0)
	}
	var part io.Reader = parts
	if s.opts.CanonicalLineEnds {
		part = &crlfReader{r: part}
	}
	content := io.TeeReader(part, ds)
	if err := s.inner(content, depth+1); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, content); err != nil {
		return err
	}
	if ok, err := parts.next(); err != nil || !ok {
		return signedPartsError(err, 1)
	}
	sigRaw, err := io.ReadAll(io.LimitReader(parts, maxSignaturePart+1))
	if err != nil {
		return err
	}
	if len(sigRaw) > maxSignaturePart {
		return fmt.Errorf("%w: signature part larger than %d bytes", ErrMalformed, maxSignaturePart)
	}
	if ok, err := parts.next(); err != nil || ok {
		return signedPartsError(err, 3)
	}
	sig, err := signaturePart(sigRaw)
	if err != nil {
		return err
	}
	vo := cms.VerifyOptions{Time: s.opts.VerifyTime, AllowSHA1: s.opts.AllowSHA1}
	info, err := cms.VerifyDigest(sig, ds.sums(), s.opts.PartnerCertificates, vo)
	if info != nil && s.res.Signer == nil {
		s.res.Signer = info
	}
	if errors.Is(err, cms.ErrIntegrity) && ds.bareLF && !s.opts.CanonicalLineEnds {
		s.res.RetryCanonical = true
	}
	return err
}

// signedPartsError is the error of a multipart/signed with a part count other than two.
func signedPartsError(err error, parts int) error {
	if err != nil {
		return err
	}
	if parts > 2 {
		return fmt.Errorf("%w: multipart/signed with more than 2 parts", ErrMalformed)
	}
	return fmt.Errorf("%w: multipart/signed with %d parts", ErrMalformed, parts)
}

// signaturePart decodes the signature of a multipart/signed's second part.
func signaturePart(raw []byte) ([]byte, error) {
	e, err := ParseEntity(raw)
	if err != nil {
		return nil, err
	}
	mt, _, err := e.MediaType()
	if err != nil {
		return nil, err
	}
	if mt != "application/pkcs7-signature" && mt != "application/x-pkcs7-signature" {
		return nil, fmt.Errorf("%w: signature part is %s", ErrUnsupportedLayer, mt)
	}
	return e.Content()
}

// digests are the digests a signed part is computed with: the algorithms micalg
// announces, SHA-256, and for the outermost signed part the requested MIC algorithm.
func (s *streamer) digests(micalg string) *digestSet {
	ds := &digestSet{hs: map[cms.DigestAlgorithm]hash.Hash{}}
	algs := []cms.DigestAlgorithm{cms.SHA256}
	for _, name := range strings.Split(micalg, ",") {
		if a, err := cms.ParseDigestAlgorithm(strings.TrimSpace(name)); err == nil {
			algs = append(algs, a)
		}
	}
	if s.outer == nil {
		if req, ok := s.res.DispositionOptions.FirstSupportedMIC(); ok {
			algs = append(algs, req.Algorithm)
		}
	}
	for _, a := range algs {
		if _, ok := ds.hs[a]; !ok {
			ds.hs[a] = a.Hash().New()
		}
	}
	return ds
}

// document writes the document's content to the sink, digesting it, and what the MIC
// of an unsigned message covers.
func (s *streamer) document(h textproto.MIMEHeader, raw []byte, body io.Reader, unwrapped bool) error {
	if err := s.opts.unmet(s.res); err != nil {
		return err
	}
	e := &Entity{Header: h}
	s.res.ContentType = h.Get("Content-Type")
	s.res.RawFileName = e.FileName()
	s.res.FileName = sanitizeFileName(s.res.RawFileName)
	if !s.res.Signed {
		// RFC 4130 7.3.1, as in finish: the decrypted entity with its headers when
		// encrypted, the content alone otherwise.
		s.micAlg, s.micName = chooseMIC(s.opts.MICPreference, s.res.DispositionOptions, "")
		s.mic = s.micAlg.Hash().New()
		if unwrapped && s.res.Encrypted {
			s.mic.Write(raw)
			body = io.TeeReader(body, s.mic)
		}
	}
	content, err := decodingReader(h.Get("Content-Transfer-Encoding"), body)
	if err != nil {
		return err
	}
	if s.mic != nil && !(unwrapped && s.res.Encrypted) {
		content = io.TeeReader(content, s.mic)
	}
	n, err := io.Copy(s.sink, content)
	if s.sink.err != nil {
		return fmt.Errorf("%w: write the document: %w", ErrIO, s.sink.err)
	}
	if err != nil {
		return err
	}
	s.res.PayloadSize = n
	return nil
}

// finish computes the MIC once the signature, if any, is verified.
func (s *streamer) finish() error {
	switch {
	case s.outer != nil:
		alg, name := chooseMIC(s.opts.MICPreference, s.res.DispositionOptions, s.res.Signer.Digest)
		s.res.mics = s.outer.sums()
		s.res.MIC = MIC{Digest: s.res.mics[alg], Algorithm: alg, Name: name}
	case s.mic != nil:
		s.res.mics = map[cms.DigestAlgorithm][]byte{s.micAlg: s.mic.Sum(nil)}
		s.res.MIC = MIC{Digest: s.res.mics[s.micAlg], Algorithm: s.micAlg, Name: s.micName}
	}
	return nil
}

// inflate decompresses a CompressedData read from r into w, within the absolute limit
// and, past a mebibyte, within the ratio to the compressed bytes read so far (the
// layer's size is not known before its end).
func (s *streamer) inflate(w io.Writer, r io.Reader) error {
	in := &countingReader{r: r}
	limit := s.opts.MaxDecompressedSize
	if limit <= 0 {
		limit = DefaultMaxDecompressedSize
	}
	rw := &ratioWriter{w: w, in: in, ratio: int64(s.opts.ratio()), limit: limit}
	err := cms.DecompressTo(rw, in, limit)
	var le *cms.DecompressionLimitError
	if errors.As(err, &le) {
		return fmt.Errorf("compressed layer inflates past %d bytes after %d compressed bytes (at most %d times its size beyond the first MiB, and no more than the size limit of %d bytes): %w",
			le.Limit, in.n, s.opts.ratio(), limit, err)
	}
	return err
}
