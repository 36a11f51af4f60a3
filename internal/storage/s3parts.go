package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// partUploads reads the parts of one multipart upload and uploads them concurrently,
// holding at most cap(free) part buffers at a time.
type partUploads struct {
	s      *S3
	object string
	id     *string
	ctx    context.Context
	cancel context.CancelCauseFunc
	// free holds the part buffers not being read or uploaded; at most cap(free) are
	// ever taken, so an upload's memory is bounded whatever the body's size.
	free  chan *[]byte
	taken int

	wg    sync.WaitGroup
	mu    sync.Mutex
	parts []types.CompletedPart
}

// run uploads first (n bytes, already read) as part 1 and the rest of src after it,
// returning the bytes uploaded once every part is, or the first failure.
func (u *partUploads) run(first *[]byte, n int, src io.Reader) (int64, error) {
	u.taken = 1
	total, err := u.readParts(first, n, src)
	if err != nil {
		// The body failed: the parts in flight are not wanted any more.
		u.cancel(err)
	}
	u.wg.Wait()
	close(u.free)
	for b := range u.free {
		u.s.parts.Put(b)
	}
	if err == nil {
		// A part that failed cancelled the rest; its error is the cause.
		err = context.Cause(u.ctx)
	}
	if err != nil {
		return 0, err
	}
	slices.SortFunc(u.parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	return total, nil
}

// readParts starts the upload of each part as soon as it is read, and reads the next into
// a free buffer, waiting for one when all are out.
func (u *partUploads) readParts(bufp *[]byte, n int, src io.Reader) (int64, error) {
	total := int64(0)
	for num := int32(1); ; num++ {
		total += int64(n)
		u.wg.Add(1)
		go u.upload(num, bufp, n)
		if n < len(*bufp) {
			return total, nil // a short part is the last one
		}
		if bufp = u.buffer(); bufp == nil {
			return 0, nil
		}
		m, err := io.ReadFull(ctxReader{u.ctx, src}, *bufp)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			u.free <- bufp
			if errors.Is(err, io.EOF) {
				return total, nil
			}
			if u.ctx.Err() != nil {
				return 0, nil
			}
			return 0, fmt.Errorf("read part %d: %w", num+1, err)
		}
		n = m
	}
}

// buffer is a free part buffer, a new one while fewer than cap(free) are taken, or nil
// when the upload ended first.
func (u *partUploads) buffer() *[]byte {
	select {
	case b := <-u.free:
		return b
	default:
	}
	if u.taken < cap(u.free) {
		u.taken++
		return u.s.partBuffer()
	}
	select {
	case b := <-u.free:
		return b
	case <-u.ctx.Done():
		return nil
	}
}

// upload sends one part and frees its buffer; a failure cancels the other parts.
func (u *partUploads) upload(num int32, bufp *[]byte, n int) {
	defer u.wg.Done()
	defer func() { u.free <- bufp }()
	out, err := u.s.client.UploadPart(u.ctx, &s3.UploadPartInput{Bucket: aws.String(u.s.cfg.Bucket),
		Key: aws.String(u.object), UploadId: u.id, PartNumber: aws.Int32(num),
		Body: bytes.NewReader((*bufp)[:n]), ContentLength: aws.Int64(int64(n))}, unsignedPayload)
	if err != nil {
		u.cancel(fmt.Errorf("upload part %d: %w", num, err))
		return
	}
	u.mu.Lock()
	u.parts = append(u.parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
	u.mu.Unlock()
}
