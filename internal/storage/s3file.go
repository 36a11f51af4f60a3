package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// maxSinglePut is the largest object one PutObject may create; larger files go as a
// multipart upload.
const maxSinglePut = 5 << 30

// putFile stores a FileBody as one PutObject streamed from the file: no part buffers, and
// the server writes the object once instead of assembling parts. ok is false, with
// nothing stored, when the body is not a regular file of a size one PutObject takes, and
// must be uploaded from its reader instead.
func (s *S3) putFile(ctx context.Context, key, object string, body FileBody, noReplace, cache bool) (blob Blob, ok bool, err error) {
	f, err := body.OpenFile()
	if err != nil {
		return Blob{}, false, nil
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxSinglePut {
		return Blob{}, false, nil
	}
	size := info.Size()
	// A file whose writer took its digest is not digested again.
	var src io.ReadSeeker = io.NewSectionReader(f, 0, size)
	digest := func() (string, error) { return body.(DigestedFileBody).SHA256(), nil }
	if _, ok := body.(DigestedFileBody); !ok {
		hr := &hashingReader{r: src, h: sha256.New()}
		src = hr
		digest = func() (string, error) { return hr.digest(size) }
	}
	in := &s3.PutObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(object),
		Body: src, ContentLength: aws.Int64(size)}
	if noReplace {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := s.client.PutObject(ctx, in, unsignedPayload); err != nil {
		return Blob{}, true, fmt.Errorf("put payload %s: %w", key, existErr(err))
	}
	sum, err := digest()
	if err != nil {
		// What was sent is not known to be what was digested: the object is not kept.
		s.client.DeleteObject(context.WithoutCancel(ctx), &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(object)})
		return Blob{}, true, fmt.Errorf("put payload %s: %w", key, err)
	}
	if cache {
		s.cache.add(key, f, size, sum)
	}
	return Blob{Key: key, Size: size, SHA256: sum}, true, nil
}

// hashingReader digests a file as it is read from its start. The SDK seeks it (to learn
// the length, to rewind for a retry); a seek back to the start begins the digest again,
// and only bytes read in order from the start are digested, so complete says whether the
// digest covers one whole read of the file.
type hashingReader struct {
	r      io.ReadSeeker
	h      hash.Hash
	pos    int64 // where the next read starts
	hashed int64 // bytes from the start digested
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if h.pos == h.hashed {
		h.h.Write(p[:n])
		h.hashed += int64(n)
	}
	h.pos += int64(n)
	return n, err
}

func (h *hashingReader) Seek(offset int64, whence int) (int64, error) {
	pos, err := h.r.Seek(offset, whence)
	if err != nil {
		return pos, err
	}
	h.pos = pos
	if pos == 0 {
		h.h.Reset()
		h.hashed = 0
	}
	return pos, nil
}

// digest is the SHA-256 of the first size bytes, if they were all read in order.
func (h *hashingReader) digest(size int64) (string, error) {
	if h.hashed != size {
		return "", fmt.Errorf("digest covers %d of %d bytes", h.hashed, size)
	}
	return hex.EncodeToString(h.h.Sum(nil)), nil
}
