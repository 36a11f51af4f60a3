package mime

import (
	"errors"
	"fmt"
	gomime "mime"

	"wharf/internal/protocol/as2/cms"
)

// layout is what building a message decides before it reads the payload: the
// options with their defaults, the payload's header fields and the MIC algorithms.
type layout struct {
	opts          BuildOptions
	payloadFields [][2]string
	signDigest    cms.DigestAlgorithm // "" when unsigned
	micAlg        cms.DigestAlgorithm
}

func newLayout(fileName string, opts BuildOptions) (layout, error) {
	if opts.newBoundary == nil {
		opts.newBoundary = randomBoundary
	}
	ct := opts.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	if _, _, err := gomime.ParseMediaType(ct); err != nil {
		return layout{}, fmt.Errorf("build: payload content type %q: %w", ct, err)
	}
	disposition := "attachment"
	if fileName != "" {
		disposition = gomime.FormatMediaType("attachment", map[string]string{"filename": fileName})
		if disposition == "" {
			return layout{}, fmt.Errorf("build: file name %q cannot be written in Content-Disposition", fileName)
		}
	}
	l := layout{opts: opts, payloadFields: [][2]string{
		{"Content-Type", ct},
		{"Content-Transfer-Encoding", "binary"},
		{"Content-Disposition", disposition},
	}}
	if s := opts.Sign; s != nil {
		if s.Certificate == nil || s.Key == nil {
			return layout{}, errors.New("build: signing needs a certificate and a key")
		}
		l.signDigest = digestOrDefault(s.Digest)
	}
	l.micAlg = opts.MICAlgorithm
	if l.micAlg == "" {
		l.micAlg = l.signDigest
	}
	if l.micAlg == "" {
		l.micAlg = cms.SHA256
	}
	if _, err := l.newHasher(); err != nil {
		return layout{}, err
	}
	return l, nil
}

// newHasher digests the MIC content with every algorithm the MICs are wanted in.
func (l layout) newHasher() (*micHasher, error) {
	return newMICHasher(append([]cms.DigestAlgorithm{l.micAlg, l.signDigest}, l.opts.MICAlgorithms...))
}

// compressFirst reports compression of the document before it is signed (or of a
// message not signed at all); compressLast, compression of the signed message.
func (l layout) compressFirst() bool { return l.opts.Compress && !l.compressLast() }
func (l layout) compressLast() bool {
	return l.opts.Compress && l.opts.Sign != nil && l.opts.CompressAfterSigning
}
