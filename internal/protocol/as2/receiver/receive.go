package receiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// receive reads the request body of x and opens the message it holds. A body that ends
// within spoolAbove bytes is read into memory and unpacked there. A larger one is
// opened in one pass as it arrives: the body goes to a spool file (the received stage)
// while its layers are opened, and the document to a second file (the unpacked stage),
// each digested on the way, so neither is held in memory nor read again before the
// store links them. bodyErr is a failure to read or keep the body (errBodyTooLarge,
// a *bodyStorageError, the reader's own); err is the message's, which is judged only
// once the body was read to its end.
func (rc *Receiver) receive(ctx context.Context, x *exchange, limit int64, opts mime.UnpackOptions) (bodyErr, err error) {
	bodyErr, err = rc.receiveBody(ctx, x, limit, opts)
	if bodyErr != nil {
		// A body not read to its end is not kept.
		x.body.close()
		if x.payload != nil {
			x.payload.remove()
		}
		x.body, x.payload, x.res = nil, nil, nil
	}
	return bodyErr, err
}

func (rc *Receiver) receiveBody(ctx context.Context, x *exchange, limit int64, opts mime.UnpackOptions) (bodyErr, err error) {
	r := x.r
	src := &bodySource{r: r.Body, limit: limit}
	head, ended, err := readHead(src, r.ContentLength, rc.spoolAbove)
	if err != nil {
		return err, nil
	}
	contentType := r.Header.Get("Content-Type")
	if ended {
		x.body = &requestBody{mem: head, size: int64(len(head))}
		x.res, err = x.body.unpack(contentType, r.Header, opts)
		return nil, err
	}
	spool, err := newSpoolFile(rc.tempDir, "as2-body-*")
	if err != nil {
		return &bodyStorageError{err}, nil
	}
	x.body = &requestBody{file: spool}
	if x.payload, err = newSpoolFile(rc.tempDir, "as2-payload-*"); err != nil {
		return &bodyStorageError{err}, nil
	}
	// On S3 both files go up as they are written, so that once the message is judged
	// only their tails remain to be stored.
	spool.stream(ctx, rc.deps.Blobs, persistence.PayloadReceived, r.ContentLength)
	x.payload.stream(ctx, rc.deps.Blobs, persistence.PayloadUnpacked, -1)
	body := io.TeeReader(io.MultiReader(bytes.NewReader(head), src), spool)
	x.res, err = mime.UnpackStream(contentType, r.Header, body, x.payload, opts)
	// A message refused before its end is kept whole with its refusal.
	if _, derr := io.Copy(io.Discard, body); derr != nil && src.err == nil && spool.err == nil {
		src.err = derr
	}
	x.body.size = spool.size
	switch {
	case src.err != nil:
		return src.err, nil
	case spool.err != nil:
		return &bodyStorageError{spool.err}, nil
	}
	if err != nil && x.res.RetryCanonical {
		// The signature may cover the signed part's CRLF form: the body is opened
		// again from its spool, which only a signature failure costs.
		if rerr := x.payload.restart(); rerr != nil {
			return nil, fmt.Errorf("%w: %w", mime.ErrIO, rerr)
		}
		opts.CanonicalLineEnds = true
		retry, rerr := mime.UnpackStream(contentType, r.Header, spool.body(), x.payload, opts)
		if rerr == nil || !errors.Is(rerr, cms.ErrIntegrity) {
			x.res, err = retry, rerr
		}
	}
	return nil, err
}

// document is the unpacked document to store: the spooled file when the body was
// opened in one pass, else the payload in memory.
func (x *exchange) document() io.Reader {
	if x.payload != nil {
		return x.payload.body()
	}
	return bytes.NewReader(x.res.Payload)
}
