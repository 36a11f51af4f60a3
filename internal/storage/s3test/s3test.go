// Package s3test starts a real S3 server for tests: the Versity S3 gateway (versitygw)
// serving a temporary directory on a loopback port.
//
// The binary is the one WHARF_TEST_S3_VERSITYGW names, else versitygw on the PATH; a
// test without either is skipped, saying so. The server's credentials reach the code under
// test the way they reach it in production, through the AWS credential chain: Start sets
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for the test, and points the shared config
// files away from the user's own.
package s3test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
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

// Binary finds versitygw, or says what is missing.
func Binary() (string, error) {
	if p := os.Getenv("WHARF_TEST_S3_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("WHARF_TEST_S3_VERSITYGW=%s: %w", p, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("versitygw")
	if err != nil {
		return "", fmt.Errorf("versitygw is not on the PATH and WHARF_TEST_S3_VERSITYGW is not set " +
			"(go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
	}
	return p, nil
}

// Start runs versitygw over a temporary directory with one bucket, sets the AWS
// credential variables for the test, and stops the server when the test ends. Tests that
// call it cannot run in parallel (they set environment variables).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Skipf("S3 test skipped: %v", err)
	}
	dir := t.TempDir()
	s := &Server{Dir: dir, Bucket: "wharf-test"}
	if err := os.Mkdir(filepath.Join(dir, s.Bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-aws-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-aws-credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")

	port := freePort(t)
	s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--port", "127.0.0.1:"+strconv.Itoa(port),
		"--access", AccessKey, "--secret", SecretKey, "posix", dir)
	logf, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start versitygw: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		logf.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return s
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(logf.Name())
			t.Fatalf("versitygw exited: %s", out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not answer on %s: %v", s.Endpoint, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort asks the system for a loopback port nobody uses at the moment.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
