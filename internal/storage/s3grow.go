package storage

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"wharf/internal/persistence"
)

// streamedDir holds, below the prefix, the objects uploaded while their file was still
// being written (Grow). Their message has no id yet when the upload starts, so their key
// is not a message's: the payload row records it like any other.
const streamedDir = "streamed/"

// Parts of a streamed upload are read from the file when they are sent, never held in
// memory, so they are larger than a buffered upload's and fewer are in flight.
const (
	streamPartSize      = 16 << 20
	streamPartsInFlight = 2
)

// streamPartTimeout bounds one request of a streamed upload, which no caller's end cuts
// short.
const streamPartTimeout = 5 * time.Minute

// errAborted ends a streamed upload its caller gave up.
var errAborted = errors.New("the streamed upload was abandoned")

// Growing uploads a file to S3 while its writer is still writing it, so when the writer
// is done only the tail remains to be sent. A file whose final length is known (a request
// body with a Content-Length) goes as one PutObject whose body follows the file as it
// grows; any other as a multipart upload, each full part sent as soon as it is written
// and the upload completed at the end (which S3-compatible servers on a file system pay
// for with a copy of the object). The writer reports the bytes written with Grew, then
// either hands the finished file to Put (a StreamedFileBody whose Streamed is this
// upload), which completes it, or calls Abort, which leaves nothing in the bucket. A file
// that ends within one part is never sent here: Put uploads it as usual. So is a file
// whose upload failed, under the message's own key.
type Growing struct {
	s      *S3
	key    string
	object string
	stage  persistence.PayloadStage
	length int64    // the file's final length when known, else -1
	f      *os.File // a read handle of its own
	// ctx is the caller's without its end: a part in flight is always let finish, since
	// one cut off may still land on the server after the upload's abort (S3 says as
	// much), leaving parts behind. A failure only stops new parts (stop).
	ctx     context.Context
	unwatch func() bool   // stops watching the caller's context
	stop    chan struct{} // closed at the first failure
	done    chan struct{} // closed when run returns

	mu       sync.Mutex
	cond     *sync.Cond
	written  int64 // bytes of the file known to be written
	ended    bool  // written is the file's final size
	err      error // the first failure; the upload is given up
	finished bool  // finish or Abort was called

	// Set by run only, read once done is closed, or under mu.
	whole    bool // the PutObject of a file of known length succeeded
	uploadID *string
	sent     int64
	parts    []types.CompletedPart
}

// StreamedFileBody is a DigestedFileBody whose file was uploaded while it was written.
type StreamedFileBody interface {
	DigestedFileBody
	// Streamed is the upload that followed the file, or nil.
	Streamed() *Growing
}

// Grow starts uploading the file name, which its writer is writing, as a new object
// for the given stage of a message not stored yet; length is the file's final length when
// the writer knows it, else -1. ctx bounds the upload. It returns nil (the file goes up
// once complete) when streaming is not worth it: a known length within one part, or an
// unknown length where parts are not streamed (see StreamParts).
func (s *S3) Grow(ctx context.Context, name string, stage persistence.PayloadStage, length int64) (*Growing, error) {
	if length < s.streamPart || length > maxSinglePut {
		if !s.streamParts {
			return nil, nil
		}
		// A short file goes whole once it is stored, and a long one in parts.
		length = -1
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("stream payload %s: %w", name, err)
	}
	object := s.cfg.Prefix + streamedDir + rand.Text() + "." + string(stage)
	g := &Growing{s: s, key: s3KeyPrefix + s.cfg.Bucket + "/" + object, object: object, stage: stage,
		length: length, f: f, done: make(chan struct{})}
	g.cond = sync.NewCond(&g.mu)
	g.ctx, g.stop = context.WithoutCancel(ctx), make(chan struct{})
	g.unwatch = context.AfterFunc(ctx, func() { g.fail(context.Cause(ctx)) })
	go g.run()
	return g, nil
}

// Grew reports that the file now holds size bytes.
func (g *Growing) Grew(size int64) {
	g.mu.Lock()
	// A part waits for a part's worth of bytes, the whole object's body for any.
	wake := g.length >= 0 || size/g.s.streamPart != g.written/g.s.streamPart
	g.written = size
	g.mu.Unlock()
	if wake {
		g.cond.Broadcast()
	}
}

// fail gives the upload up with err, unless it failed before.
func (g *Growing) fail(err error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
		close(g.stop)
	}
	g.mu.Unlock()
	g.cond.Broadcast()
}

// run sends each part once it is written, up to streamPartsInFlight at a time, until
// the file ended and every byte went, or the upload failed.
func (g *Growing) run() {
	defer close(g.done)
	if g.length >= 0 {
		g.putWhole()
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, streamPartsInFlight)
	for num := int32(1); ; num++ {
		g.mu.Lock()
		for g.err == nil && !g.ended && g.written-g.sent < g.s.streamPart {
			g.cond.Wait()
		}
		n := min(g.written-g.sent, g.s.streamPart)
		// A file that ended within its first part is not worth a multipart upload.
		stop := g.err != nil || n == 0 || (g.ended && num == 1 && n < g.s.streamPart)
		g.mu.Unlock()
		if stop {
			return
		}
		if g.uploadID == nil {
			ctx, cancel := context.WithTimeout(g.ctx, streamPartTimeout)
			up, err := g.s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
				Bucket: aws.String(g.s.cfg.Bucket), Key: aws.String(g.object)})
			cancel()
			if err != nil {
				g.fail(fmt.Errorf("start multipart upload: %w", err))
				return
			}
			g.uploadID = up.UploadId
		}
		select {
		case slots <- struct{}{}:
		case <-g.stop:
			return
		}
		off := g.sent
		g.sent += n
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			ctx, cancel := context.WithTimeout(g.ctx, streamPartTimeout)
			defer cancel()
			out, err := g.s.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(g.s.cfg.Bucket),
				Key: aws.String(g.object), UploadId: g.uploadID, PartNumber: aws.Int32(num),
				Body: io.NewSectionReader(g.f, off, n), ContentLength: aws.Int64(n)}, unsignedPayload)
			if err != nil {
				g.fail(fmt.Errorf("upload part %d: %w", num, err))
				return
			}
			g.mu.Lock()
			g.parts = append(g.parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
			g.mu.Unlock()
		}()
	}
}

// StreamParts sets whether files of unknown length are streamed in parts (a multipart
// upload); by default only on AWS, where completing the upload copies nothing on our
// machine.
func (s *S3) StreamParts(on bool) { s.streamParts = on }

// putWhole sends a file of known length as one PutObject whose body follows the file.
// A failure ends the body early, so the server never stores the object.
func (g *Growing) putWhole() {
	_, err := g.s.client.PutObject(g.ctx, &s3.PutObjectInput{Bucket: aws.String(g.s.cfg.Bucket),
		Key: aws.String(g.object), Body: &following{g: g}, ContentLength: aws.Int64(g.length)}, unsignedPayload)
	if err != nil {
		g.fail(fmt.Errorf("put object: %w", err))
		return
	}
	g.whole = true
}

// following reads a growing file of known length from its start, waiting for its writer,
// and fails once the upload failed or the file ended short.
type following struct {
	g   *Growing
	off int64
}

func (r *following) Read(p []byte) (int, error) {
	g := r.g
	if r.off >= g.length {
		return 0, io.EOF
	}
	g.mu.Lock()
	for g.err == nil && !g.ended && g.written <= r.off {
		g.cond.Wait()
	}
	err, written := g.err, g.written
	g.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if written <= r.off {
		return 0, fmt.Errorf("the file ended at %d of %d bytes", written, g.length)
	}
	n, err := g.f.ReadAt(p[:min(int64(len(p)), min(written, g.length)-r.off)], r.off)
	r.off += int64(n)
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil
	}
	return n, err
}

// errNotStreamed says a file's upload did not follow it to its end; Put uploads it anew.
var errNotStreamed = errors.New("the file was not streamed whole")

// finish waits for the last parts of a file of size bytes with the given digest and
// completes the upload. An error leaves nothing in the bucket.
func (g *Growing) finish(ctx context.Context, size int64, sha string, cache bool) (Blob, error) {
	g.mu.Lock()
	if g.finished {
		g.mu.Unlock()
		return Blob{}, fmt.Errorf("%w: its upload was finished before", errNotStreamed)
	}
	g.finished = true
	if g.written != size && g.err == nil {
		g.err = fmt.Errorf("%w: the file has %d bytes, %d were reported", errNotStreamed, size, g.written)
	}
	g.ended = true
	g.mu.Unlock()
	g.cond.Broadcast()
	select {
	case <-g.done:
	case <-ctx.Done():
		// The parts in flight are let finish before the upload is aborted.
		g.unwatch()
		g.fail(context.Cause(ctx))
		go func() {
			<-g.done
			g.abortUpload()
			g.f.Close()
		}()
		return Blob{}, fmt.Errorf("put payload %s: %w", g.key, context.Cause(ctx))
	}
	defer g.f.Close()
	err := g.err
	switch {
	case err == nil && g.length >= 0 && (!g.whole || size != g.length):
		err = fmt.Errorf("%w: the file has %d bytes, %d were announced", errNotStreamed, size, g.length)
	case g.length >= 0:
	case err == nil && g.uploadID == nil:
		err = errNotStreamed
	case err == nil && g.sent != size:
		err = fmt.Errorf("%w: %d of %d bytes sent", errNotStreamed, g.sent, size)
	}
	if err == nil && g.length < 0 {
		slices.SortFunc(g.parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
		_, err = g.s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: aws.String(g.s.cfg.Bucket), Key: aws.String(g.object), UploadId: g.uploadID,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: g.parts}})
		if err != nil {
			err = fmt.Errorf("complete multipart upload: %w", err)
		}
	}
	g.unwatch()
	if err != nil {
		g.abortUpload()
		return Blob{}, fmt.Errorf("put payload %s: %w", g.key, err)
	}
	if cache {
		g.s.cache.add(g.key, g.f, size, sha)
	}
	return Blob{Key: g.key, Size: size, SHA256: sha}, nil
}

// Abort gives the upload up and removes what it sent; after a finish it does nothing.
func (g *Growing) Abort() {
	g.mu.Lock()
	if g.finished {
		g.mu.Unlock()
		return
	}
	g.finished = true
	g.mu.Unlock()
	g.unwatch()
	g.fail(errAborted)
	<-g.done
	g.abortUpload()
	g.f.Close()
}

// abortUpload removes the parts sent, if any; run has returned.
func (g *Growing) abortUpload() {
	ctx, cancel := context.WithTimeout(g.ctx, time.Minute)
	defer cancel()
	if g.length >= 0 {
		// The body may have ended complete as the upload was given up.
		g.s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(g.s.cfg.Bucket), Key: aws.String(g.object)})
		return
	}
	if g.uploadID == nil {
		return
	}
	g.s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(g.s.cfg.Bucket), Key: aws.String(g.object), UploadId: g.uploadID})
}

// putStreamed completes the upload that followed body's file, when it did so to the
// file's end; ok is false when the file must be uploaded anew.
func (s *S3) putStreamed(ctx context.Context, body StreamedFileBody, stage persistence.PayloadStage) (Blob, bool) {
	g := body.Streamed()
	if g == nil || g.s != s || g.stage != stage {
		return Blob{}, false
	}
	f, err := body.OpenFile()
	if err != nil {
		g.Abort()
		return Blob{}, false
	}
	info, err := f.Stat()
	f.Close()
	if err != nil {
		g.Abort()
		return Blob{}, false
	}
	b, err := g.finish(ctx, info.Size(), body.SHA256(), stage == persistence.PayloadUnpacked)
	if err != nil {
		return Blob{}, false
	}
	return b, true
}

// RemoveStaleStreams aborts the streamed uploads started before cutoff that were never
// completed nor aborted: those of a process that ended while it received them. Where
// parts are not streamed (StreamParts) there are none, and the bucket is not listed.
func (s *S3) RemoveStaleStreams(ctx context.Context, cutoff time.Time) error {
	if !s.streamParts {
		return nil
	}
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(s.cfg.Bucket), Prefix: aws.String(s.cfg.Prefix + streamedDir)}
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return fmt.Errorf("list stale streamed uploads: %w", err)
		}
		for _, u := range out.Uploads {
			if u.Initiated == nil || !u.Initiated.Before(cutoff) {
				continue
			}
			if _, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(s.cfg.Bucket), Key: u.Key, UploadId: u.UploadId}); err != nil {
				return fmt.Errorf("abort stale streamed upload %s: %w", aws.ToString(u.Key), err)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}
