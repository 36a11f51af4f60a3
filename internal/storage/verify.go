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
	return &verifier{rc: rc, key: p.Key, size: p.Size, sha256: p.SHA256, h: sha256.New()}
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

func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.n > v.size {
		v.err = fmt.Errorf("read payload %s: %w: more than the %d bytes recorded", v.key, ErrCorrupt, v.size)
		return 0, v.err
	}
	if errors.Is(err, io.EOF) {
		if v.n != v.size {
			v.err = fmt.Errorf("read payload %s: %w: %d bytes, %d recorded", v.key, ErrCorrupt, v.n, v.size)
			return n, v.err
		}
		if got := hex.EncodeToString(v.h.Sum(nil)); !strings.EqualFold(got, v.sha256) {
			v.err = fmt.Errorf("read payload %s: %w: SHA-256 %s, %s recorded", v.key, ErrCorrupt, got, v.sha256)
			return n, v.err
		}
		v.err = io.EOF
	}
	return n, err
}

func (v *verifier) Close() error { return v.rc.Close() }
