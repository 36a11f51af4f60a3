package loadtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"wharf/internal/storage/versitygw"
)

// Payload storages a load test runs both instances on.
const (
	StorageLocal = "local"
	StorageS3    = "s3"
)

// S3Options places both instances' payloads in one S3 bucket, each under a prefix of
// its own. Without an Endpoint the run starts versitygw (WHARF_TEST_S3_VERSITYGW, else
// on the PATH) over a directory of its own, with credentials made for the run; with one,
// the bucket must exist and the instances take their credentials from the AWS credential
// chain of the environment the load test runs in.
type S3Options struct {
	Endpoint string
	Bucket   string
	Region   string
}

// s3Run is the S3 storage of a run: the endpoint, and the server the run started.
type s3Run struct {
	opt S3Options
	env []string
	gw  *versitygw.Gateway
}

// startS3 readies the bucket of a run, starting versitygw in dir when no endpoint is
// given.
func startS3(opt S3Options, dir string) (*s3Run, error) {
	if opt.Bucket == "" {
		return nil, errors.New("loadtest: -s3-bucket is required")
	}
	if opt.Region == "" {
		opt.Region = "us-east-1"
	}
	run := &s3Run{opt: opt, env: []string{"AWS_REGION=" + opt.Region}}
	if opt.Endpoint != "" {
		return run, nil
	}
	bin, err := versitygw.Binary()
	if err != nil {
		return nil, fmt.Errorf("loadtest: -storage s3 without -s3-endpoint starts versitygw: %w", err)
	}
	served := filepath.Join(dir, "s3", "data")
	if err := os.MkdirAll(filepath.Join(served, opt.Bucket), 0o750); err != nil {
		return nil, err
	}
	access, secret := "loadtest-"+rand.Text()[:12], rand.Text()
	if run.gw, err = versitygw.Run(bin, served, access, secret); err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	run.opt.Endpoint = run.gw.Endpoint
	run.env = append(run.env, versitygw.ClientEnv(access, secret, filepath.Join(dir, "s3", "none"))...)
	return run, nil
}

// stop ends the server the run started.
func (s *s3Run) stop() {
	if s != nil && s.gw != nil {
		s.gw.Stop()
	}
}

// describe says where payloads go, for the run's header line.
func (s *s3Run) describe() string {
	what := "an existing endpoint"
	if s.gw != nil {
		what = "versitygw started for the run"
	}
	return fmt.Sprintf("S3 bucket %s at %s (%s)", s.opt.Bucket, s.opt.Endpoint, what)
}

// useS3 saves the storage settings that put the instance's new payloads in the bucket
// under a prefix named after it, restarts it so they apply, and checks that it runs on
// S3 and that the storage test passes.
func useS3(ctx context.Context, in *Instance, s *s3Run, prefix string, progress io.Writer) error {
	err := in.API(ctx, "PUT", "/api/v1/settings", map[string]string{
		"payload_storage": StorageS3, "s3_bucket": s.opt.Bucket, "s3_region": s.opt.Region,
		"s3_endpoint": s.opt.Endpoint, "s3_path_style": "true", "s3_prefix": prefix,
	}, nil)
	if err != nil {
		return fmt.Errorf("save the S3 settings: %w", err)
	}
	if _, err := in.Stop(time.Minute); err != nil {
		return fmt.Errorf("restart for S3: %w", err)
	}
	if err := in.Start(ctx); err != nil {
		return fmt.Errorf("restart for S3: %w", err)
	}
	var status struct {
		Running map[string]string `json:"running"`
	}
	if err := in.API(ctx, "GET", "/api/v1/settings/storage", nil, &status); err != nil {
		return err
	}
	if status.Running["payload_storage"] != StorageS3 {
		return fmt.Errorf("the instance runs on %q payload storage after its restart, not S3", status.Running["payload_storage"])
	}
	var probe struct {
		OK      bool   `json:"ok"`
		Step    string `json:"step"`
		Message string `json:"message"`
	}
	if err := in.API(ctx, "POST", "/api/v1/settings/storage/test", nil, &probe); err != nil {
		return fmt.Errorf("test the S3 storage: %w", err)
	}
	if !probe.OK {
		return fmt.Errorf("the S3 storage test failed at %s: %s", probe.Step, probe.Message)
	}
	fmt.Fprintf(progress, "payload storage: new payloads on S3 under the prefix %s, storage test passed\n", prefix)
	return nil
}
