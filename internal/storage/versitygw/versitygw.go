// Package versitygw runs the Versity S3 gateway (versitygw), a real S3 server over a
// directory, on a loopback port: the tests' S3 server (internal/storage/s3test) and the
// load test's with -storage s3.
//
// The binary is the one WHARF_TEST_S3_VERSITYGW names, else versitygw on the PATH.
package versitygw

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

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
// versitygw.log in dir's parent.
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
	// ETags come from the data-integrity checksum instead of an MD5 of every byte: Wharf
	// never reads an ETag as a digest (it checks its own SHA-256), and the MD5 costs
	// about a second of CPU per GiB stored, which a real S3 service spends on its own
	// machines but versitygw spends on the cores it shares with the gateways under test.
	cmd := exec.CommandContext(ctx, bin, "--port", addr, "--access", accessKey, "--secret", secretKey, "posix", "--data-integrity-etag", dir)
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

// ClientEnv is the environment (NAME=value) under which a process reaches the server as it
// would any bucket, through the AWS credential chain, with the user's own AWS files and
// the instance metadata kept out; none names a file that does not exist.
func ClientEnv(accessKey, secretKey, none string) []string {
	return []string{"AWS_ACCESS_KEY_ID=" + accessKey, "AWS_SECRET_ACCESS_KEY=" + secretKey, "AWS_SESSION_TOKEN=",
		"AWS_PROFILE=", "AWS_CONFIG_FILE=" + none, "AWS_SHARED_CREDENTIALS_FILE=" + none, "AWS_EC2_METADATA_DISABLED=true"}
}
