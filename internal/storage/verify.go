package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"wharf/internal/persistence"
)

// ErrCorrupt is what reading a blob to its end returns when its bytes are not those its
// payload row recorded.
var ErrCorrupt = errors.New("payload does not match its recorded size and SHA-256")

// Verify wraps the reader of the blob p describes so that it checks the bytes against the
// size and SHA-256 recorded when the blob was stored: reading past the recorded size, or
// reaching the end with another size or digest, fails with ErrCorrupt naming the key.
// Blobs on S3 are uploaded without a SigV4 payload hash, so this is what detects a body
// changed in the bucket or on the way back. Local blobs and rows without a digest are
// returned as they are.
func Verify(rc io.ReadCloser, p persistence.Payload) io.ReadCloser {
	if p.SHA256 == "" || !strings.HasPrefix(p.Key, s3KeyPrefix) {
		return rc
	}
	if c, ok := rc.(Checking); ok && strings.EqualFold(c.ChecksSHA256(), p.SHA256) {
		// The reader (a cached copy) checks itself against the same digest.
		return rc
	}
	return &verifier{rc: rc, key: p.Key, size: p.Size, sha256: p.SHA256, h: sha256.New()}
}

// Checking is a blob reader that checks the bytes it hands over against a recorded
// SHA-256 and fails at its end, holding back the last byte, when they differ (Verify's
// reader, a cached copy). A consumer that would take the same digest itself can rely on
// it instead of hashing the blob a second time.
type Checking interface {
	ChecksSHA256() string
}

type verifier struct {
	rc     io.ReadCloser
	key    string
	size   int64
	sha256 string
	h      hash.Hash
	n      int64
	err    error // sticky once the end or a mismatch was seen
}

// ChecksSHA256 is the digest the bytes are checked against (Checking).
func (v *verifier) ChecksSHA256() string { return v.sha256 }

// Read hands over the blob's last recorded byte only once the blob is known whole: a
// reader that stops at the recorded size (an HTTP body with that Content-Length) then
// never sends a corrupt blob complete.
func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.n > v.size {
		return 0, v.fail(fmt.Errorf("more than the %d bytes recorded", v.size))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return n, err
	}
	if v.n < v.size {
		if err != nil {
			return n, v.fail(fmt.Errorf("%d bytes, %d recorded", v.n, v.size))
		}
		return n, nil
	}
	// Every recorded byte is read; p[n-1] is the last (unless the blob is empty).
	held := min(n, 1)
	if err == nil {
		if err := v.expectEnd(); err != nil {
			return n - held, err
		}
	}
	if got := hex.EncodeToString(v.h.Sum(nil)); !strings.EqualFold(got, v.sha256) {
		return n - held, v.fail(fmt.Errorf("SHA-256 %s, %s recorded", got, v.sha256))
	}
	v.err = io.EOF
	return n, io.EOF
}

// expectEnd reads on after the recorded size, which must be the blob's end.
func (v *verifier) expectEnd() error {
	var one [1]byte
	for {
		n, err := v.rc.Read(one[:])
		if n > 0 {
			return v.fail(fmt.Errorf("more than the %d bytes recorded", v.size))
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			v.err = err
			return err
		}
	}
}

// fail makes a mismatch the reader's lasting error, naming the key.
func (v *verifier) fail(what error) error {
	v.err = fmt.Errorf("read payload %s: %w: %w", v.key, ErrCorrupt, what)
	return v.err
}

// Corruption is the ErrCorrupt a reader Verify returned has met, or nil: what
// consumed the reader may have reported it as its own failure (a request body that
// broke off), and the caller names the real cause with it.
func Corruption(r io.Reader) error {
	if v, ok := r.(*verifier); ok && errors.Is(v.err, ErrCorrupt) {
		return v.err
	}
	return nil
}

func (v *verifier) Close() error { return v.rc.Close() }
