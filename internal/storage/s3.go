package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"wharf/internal/persistence"
)

// S3Config names a bucket and how to reach it. Credentials are never part of it: they come
// from the AWS default chain (environment, shared config and credentials files, web
// identity, container and instance roles).
type S3Config struct {
	Bucket string
	Region string
	// Endpoint is the base URL of an S3-compatible server; empty for AWS itself.
	Endpoint string
	// PathStyle addresses the bucket in the path rather than the host name, as most
	// S3-compatible servers need.
	PathStyle bool
	// Prefix is put before every object key, such as "wharf/"; empty for none.
	Prefix string
}

// DefaultPartSize is the size of each part of a multipart upload.
const DefaultPartSize = 8 << 20

// DefaultPartsInFlight is how many parts of one multipart upload are held at once, being
// read or uploaded: an S3 Put holds at most DefaultPartsInFlight*DefaultPartSize (32 MiB)
// of a body in memory.
const DefaultPartsInFlight = 4

// S3 stores blobs as objects of one bucket. A blob is durable when PutObject or
// CompleteMultipartUpload returns, so DeferSync and DeferDirSync change nothing and Sync
// does nothing.
type S3 struct {
	client        *s3.Client
	cfg           S3Config
	partSize      int64
	partsInFlight int
	parts         sync.Pool
	cache         *blobCache // nil unless EnableCache
	streamPart    int64      // part size of streamed uploads
	// streamParts sends files of unknown length in parts while they are written. S3
	// assembles parts without cost to us, but an S3-compatible server keeping objects on
	// a file system (MinIO, versitygw) copies them into the object when the upload
	// completes, often on the gateway's own machine: there a file goes up once complete.
	streamParts bool
}

// NewS3 makes a client for cfg with credentials from the AWS default chain. It makes no
// request: a wrong bucket or endpoint shows at the first use (see Probe).
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, fmt.Errorf("S3 payload store: no bucket")
	}
	opts := []func(*config.LoadOptions) error{}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("S3 payload store: load the AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		// S3-compatible servers ignore the region, but the signature needs one.
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// Servers other than AWS often lack the newer default checksums.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &S3{client: client, cfg: cfg, partSize: DefaultPartSize, partsInFlight: DefaultPartsInFlight,
		streamPart: streamPartSize, streamParts: cfg.Endpoint == ""}, nil
}

// Put uploads r as the given stage of a message: a file uploaded while it was written
// (StreamedFileBody) by completing that upload, a FileBody in one PutObject streamed
// from its file, anything else in one PutObject when it fits one part, else as a
// multipart upload holding at most partsInFlight parts in memory.
func (s *S3) Put(ctx context.Context, messageID int64, stage persistence.PayloadStage, r io.Reader, opts ...PutOption) (Blob, error) {
	var cfg putConfig
	for _, o := range opts {
		o(&cfg)
	}
	key, err := s.KeyOf(messageID, stage)
	if err != nil {
		return Blob{}, err
	}
	if sb, ok := r.(StreamedFileBody); ok {
		if b, ok := s.putStreamed(ctx, sb, stage); ok {
			return b, nil
		}
	}
	_, object, _ := strings.Cut(strings.TrimPrefix(key, s3KeyPrefix), "/")
	// Only the document is read back soon (by the targets), so only it is cached.
	return s.upload(ctx, key, object, r, cfg.noReplace, stage == persistence.PayloadUnpacked)
}

// upload stores r as object, reporting it under key; cache keeps a local copy of a
// FileBody.
func (s *S3) upload(ctx context.Context, key, object string, r io.Reader, noReplace, cache bool) (Blob, error) {
	if fb, ok := r.(FileBody); ok {
		if b, ok, err := s.putFile(ctx, key, object, fb, noReplace, cache); ok {
			return b, err
		}
	}
	// A file whose writer took its digest is not digested again.
	var src io.Reader = ctxReader{ctx, r}
	var digest func() string
	if d, ok := r.(DigestedFileBody); ok {
		digest = d.SHA256
	} else {
		h := sha256.New()
		src = io.TeeReader(src, h)
		digest = func() string { return hex.EncodeToString(h.Sum(nil)) }
	}
	// A small body is read into a small buffer; only a larger one takes a part buffer.
	head := make([]byte, smallBody)
	n, err := io.ReadFull(src, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return Blob{}, fmt.Errorf("put payload %s: read: %w", key, err)
	}
	var size int64
	if n < smallBody {
		if err := s.putObject(ctx, object, head[:n], noReplace); err != nil {
			return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
		}
		size = int64(n)
	} else if size, err = s.putLarge(ctx, object, head, src, noReplace); err != nil {
		return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
	}
	return Blob{Key: key, Size: size, SHA256: digest()}, nil
}

// smallBody is the most of a body read before deciding whether it needs a part buffer.
const smallBody = 64 << 10

func (s *S3) putObject(ctx context.Context, object string, body []byte, noReplace bool) error {
	in := &s3.PutObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(object),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}
	if noReplace {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := s.client.PutObject(ctx, in, unsignedPayload); err != nil {
		return existErr(err)
	}
	return nil
}

// putLarge fills a part buffer from head and src: what fits one part goes in one
// PutObject, anything longer as a multipart upload.
func (s *S3) putLarge(ctx context.Context, object string, head []byte, src io.Reader, noReplace bool) (int64, error) {
	bufp := s.partBuffer()
	buf := *bufp
	copy(buf, head)
	m, err := io.ReadFull(src, buf[len(head):])
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		s.parts.Put(bufp)
		return 0, fmt.Errorf("read: %w", err)
	}
	first := len(head) + m
	if int64(first) < s.partSize {
		defer s.parts.Put(bufp)
		return int64(first), s.putObject(ctx, object, buf[:first], noReplace)
	}
	return s.multipart(ctx, object, bufp, src, noReplace)
}

// partBuffer is a buffer of partSize bytes, from the pool when one is free.
func (s *S3) partBuffer() *[]byte {
	bufp, _ := s.parts.Get().(*[]byte)
	if bufp == nil || int64(cap(*bufp)) < s.partSize {
		b := make([]byte, s.partSize)
		bufp = &b
	}
	*bufp = (*bufp)[:s.partSize]
	return bufp
}

// multipart uploads first, a full first part it takes over, and then the rest of src in
// parts of partSize. Up to partsInFlight parts are held at once, being read or uploaded,
// so reading the next part overlaps the server's work on the previous ones while memory
// stays bounded. Any failure aborts the upload so no parts are left billed in the bucket.
func (s *S3) multipart(ctx context.Context, object string, first *[]byte, src io.Reader, noReplace bool) (int64, error) {
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(s.cfg.Bucket), Key: aws.String(object)})
	if err != nil {
		s.parts.Put(first)
		return 0, fmt.Errorf("start multipart upload: %w", err)
	}
	done := false
	defer func() {
		if !done {
			// The upload's own context may be what ended it.
			s.client.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{
				Bucket: aws.String(s.cfg.Bucket), Key: aws.String(object), UploadId: up.UploadId})
		}
	}()
	u := &partUploads{s: s, object: object, id: up.UploadId, free: make(chan *[]byte, s.partsInFlight)}
	u.ctx, u.cancel = context.WithCancelCause(ctx)
	defer u.cancel(nil)
	total, err := u.run(first, len(*first), src)
	if err != nil {
		return 0, err
	}
	in := &s3.CompleteMultipartUploadInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(object),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: u.parts}}
	if noReplace {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := s.client.CompleteMultipartUpload(ctx, in); err != nil {
		return 0, fmt.Errorf("complete multipart upload: %w", existErr(err))
	}
	done = true
	return total, nil
}

// unsignedPayload signs an upload's headers but not its body (UNSIGNED-PAYLOAD), sparing
// a SHA-256 pass over every byte sent. The blob's own SHA-256, recorded in its payload
// row, is checked when it is read back (Verify).
func unsignedPayload(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

// KeyOf is "s3:<bucket>/<prefix><Key>".
func (s *S3) KeyOf(messageID int64, stage persistence.PayloadStage) (string, error) {
	rel, err := Key(messageID, stage)
	if err != nil {
		return "", err
	}
	return s3KeyPrefix + s.cfg.Bucket + "/" + s.cfg.Prefix + rel, nil
}

// Open streams a stored object, from the local copy when the cache holds one.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	bucket, object, err := splitS3Key(key)
	if err != nil {
		return nil, err
	}
	if rc, ok := s.cache.open(key); ok {
		return rc, nil
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(object)})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) || apiCode(err) == "NotFound" {
			return nil, fmt.Errorf("open payload %s: %w", key, ErrNotFound)
		}
		return nil, fmt.Errorf("open payload %s: %w", key, err)
	}
	return out.Body, nil
}

// Delete removes an object; a missing one is not an error.
func (s *S3) Delete(ctx context.Context, key string) error {
	bucket, object, err := splitS3Key(key)
	if err != nil {
		return err
	}
	s.cache.drop(key)
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(object)}); err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil
		}
		return fmt.Errorf("delete payload %s: %w", key, err)
	}
	return nil
}

// Sync does nothing: an object is durable once its upload returned.
func (s *S3) Sync(context.Context, []string) error { return nil }

// splitS3Key parses "s3:<bucket>/<object>".
func splitS3Key(key string) (bucket, object string, err error) {
	rest, ok := strings.CutPrefix(key, s3KeyPrefix)
	if !ok {
		return "", "", fmt.Errorf("%w %q: not an S3 key", ErrInvalidKey, key)
	}
	bucket, object, ok = strings.Cut(rest, "/")
	if !ok || bucket == "" || object == "" {
		return "", "", fmt.Errorf("%w %q: no bucket or object", ErrInvalidKey, key)
	}
	return bucket, object, nil
}

// existErr turns a failed conditional write into an error wrapping fs.ErrExist, as Local
// reports a NoReplace Put over an existing blob.
func existErr(err error) error {
	if apiCode(err) == "PreconditionFailed" {
		return fmt.Errorf("%w: %w", fs.ErrExist, err)
	}
	return err
}

// apiCode is the error code an S3 server answered with, or "".
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
