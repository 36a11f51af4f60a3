// Package s3test starts a real S3 server for tests: the Versity S3 gateway (versitygw)
// serving a temporary directory on a loopback port (package versitygw runs it).
//
// A test without the binary is skipped, saying so. The server's credentials reach the code under
// test the way they reach it in production, through the AWS credential chain: Start sets
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for the test, and points the shared config
// files away from the user's own.
package s3test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wharf/internal/storage/versitygw"
)

// Test credentials of the server; never anything real.
const (
	AccessKey = "wharf-test-access"
	SecretKey = "wharf-test-secret-key"
)

// Server is a running versitygw.
type Server struct {
	// Endpoint is the server's base URL, such as http://127.0.0.1:40123.
	Endpoint string
	// Bucket exists and is empty when Start returns.
	Bucket string
	// Dir is the directory served; each bucket is a directory in it.
	Dir string
}

// Start runs versitygw over a temporary directory with one bucket, sets the AWS
// credential variables for the test, and stops the server when the test ends. Tests that
// call it cannot run in parallel (they set environment variables).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := versitygw.Binary()
	if err != nil {
		t.Skipf("S3 test skipped: %v", err)
	}
	dir := t.TempDir()
	s := &Server{Dir: dir, Bucket: "wharf-test"}
	if err := os.Mkdir(filepath.Join(dir, s.Bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range versitygw.ClientEnv(AccessKey, SecretKey, filepath.Join(dir, "no-aws-files")) {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	t.Setenv("AWS_REGION", "us-east-1")

	gw, err := versitygw.Run(bin, dir, AccessKey, SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)
	s.Endpoint = gw.Endpoint
	return s
}
