// Package s3test starts a real S3 server for tests: the Versity S3 gateway (versitygw)
// serving a temporary directory on a loopback port. Run starts one outside a test, for
// the load test's -storage s3.
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

	gw, err := Run(bin, dir, AccessKey, SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Stop)
	s.Endpoint = gw.Endpoint
	return s
}

// Gateway is a versitygw process.
type Gateway struct {
	// Endpoint is its base URL, such as http://127.0.0.1:40123.
	Endpoint string
	cancel   context.CancelFunc
	exited   chan struct{}
	logf     *os.File
}

// Run starts versitygw on a free loopback port, serving dir (each bucket a directory in
// it) to the given credentials, and returns once it answers. Its output goes to
// versitygw.log in dir's parent. The load test runs it too, outside any test.
func Run(bin, dir, accessKey, secretKey string) (*Gateway, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a port for versitygw: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	logf, err := os.Create(filepath.Join(filepath.Dir(dir), "versitygw.log"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--port", addr, "--access", accessKey, "--secret", secretKey, "posix", dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		cancel()
		logf.Close()
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	g := &Gateway{Endpoint: "http://" + addr, cancel: cancel, exited: make(chan struct{}), logf: logf}
	go func() { cmd.Wait(); close(g.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(g.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return g, nil
		}
		select {
		case <-g.exited:
			g.Stop()
			out, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("versitygw exited: %s", out)
		default:
		}
		if time.Now().After(deadline) {
			g.Stop()
			return nil, fmt.Errorf("versitygw did not answer on %s: %w", g.Endpoint, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop ends the process and waits for it.
func (g *Gateway) Stop() {
	g.cancel()
	<-g.exited
	g.logf.Close()
}
