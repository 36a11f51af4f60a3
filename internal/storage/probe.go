package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"
)

// Steps of a probe, in order.
const (
	StepWrite   = "write"
	StepRead    = "read"
	StepCompare = "compare"
	StepDelete  = "delete"
)

// ProbeResult is what a storage test found. Nothing in it carries credentials: the server's
// error code and message, the HTTP status, or the transport's failure.
type ProbeResult struct {
	OK bool `json:"ok"`
	// Store is the kind tested (local or s3) and Location the directory or bucket.
	Store    string `json:"store"`
	Location string `json:"location"`
	// Step is the step that failed (write, read, compare, delete), empty when OK.
	Step string `json:"step,omitempty"`
	// Code is the error code the S3 server answered with (such as NoSuchBucket), if any.
	Code string `json:"code,omitempty"`
	// HTTPStatus is the status of the failed request, 0 when none came back.
	HTTPStatus int    `json:"http_status,omitempty"`
	Message    string `json:"message,omitempty"`
}

// probeBody is written, read back and compared: random, so a stale object cannot pass.
func probeBody() []byte {
	return []byte("wharf storage probe " + rand.Text() + "\n")
}

// Probe writes a probe object under the prefix, reads it back, compares and deletes it.
func (s *S3) Probe(ctx context.Context) ProbeResult {
	res := ProbeResult{Store: KindS3, Location: s.cfg.Bucket}
	body := probeBody()
	object := s.cfg.Prefix + ".wharf-probe/" + rand.Text()
	bucket := aws.String(s.cfg.Bucket)
	if _, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: aws.String(object),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}); err != nil {
		return res.failed(StepWrite, err)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: aws.String(object)})
	if err != nil {
		return res.failed(StepRead, err)
	}
	got, err := io.ReadAll(io.LimitReader(out.Body, int64(len(body))+1))
	out.Body.Close()
	if err != nil {
		return res.failed(StepRead, err)
	}
	if !bytes.Equal(got, body) {
		s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String(object)})
		return res.failed(StepCompare, fmt.Errorf("read back %d bytes that differ from the %d written", len(got), len(body)))
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bucket, Key: aws.String(object)}); err != nil {
		return res.failed(StepDelete, err)
	}
	res.OK = true
	return res
}

// Probe writes a probe file in the store's temporary directory, reads it back, compares
// and deletes it.
func (l *Local) Probe(ctx context.Context) ProbeResult {
	res := ProbeResult{Store: KindLocal, Location: l.root}
	body := probeBody()
	name := filepath.Join(l.tmp, "probe."+rand.Text())
	if err := os.WriteFile(name, body, 0o600); err != nil {
		return res.failed(StepWrite, err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		os.Remove(name)
		return res.failed(StepRead, err)
	}
	if !bytes.Equal(got, body) {
		os.Remove(name)
		return res.failed(StepCompare, fmt.Errorf("read back %d bytes that differ from the %d written", len(got), len(body)))
	}
	if err := os.Remove(name); err != nil {
		return res.failed(StepDelete, err)
	}
	res.OK = true
	return res
}

// failed fills in the step and what the server or transport said.
func (r ProbeResult) failed(step string, err error) ProbeResult {
	r.OK, r.Step = false, step
	var ae smithy.APIError
	if errors.As(err, &ae) {
		r.Code, r.Message = ae.ErrorCode(), ae.ErrorMessage()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		r.HTTPStatus = re.HTTPStatusCode()
	}
	if r.Message == "" {
		r.Message = transportMessage(err)
	}
	return r
}

// transportMessage is the innermost cause of a failure without a server answer (a refused
// connection, an unknown host): the SDK's wrapping adds nothing an operator needs.
func transportMessage(err error) string {
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	var se *awshttp.ResponseError
	if errors.As(err, &se) && se.Err != nil {
		err = se.Err
	}
	return err.Error()
}

// Status is the payload storage a process runs with (Running) beside what the settings
// name (Configured), each as the payload_storage and s3_* settings; a difference applies
// at the next start.
type Status struct {
	Running        map[string]string `json:"running"`
	Configured     map[string]string `json:"configured"`
	PendingRestart bool              `json:"pending_restart"`
}
