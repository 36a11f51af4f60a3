package storage

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"wharf/internal/persistence"
	"wharf/internal/storage/s3test"
)

// s3Proxy stands between an S3 client and a real S3 server, watching the part uploads.
type s3Proxy struct {
	mu       sync.Mutex
	cond     *sync.Cond
	inFlight int // part uploads received and not yet answered
	arrived  int
	maxSeen  int
	want     int // parts held until this many are in flight (or all arrived)
	total    int
	failPart string // a part number answered with AccessDenied
	aborted  bool
	retryPut int      // PUTs answered 500 before the rest pass
	puts     []string // the query of every PUT
	payloads []string // X-Amz-Content-Sha256 of every PUT
}

func startS3Proxy(t *testing.T, srv *s3test.Server, p *s3Proxy) *S3 {
	t.Helper()
	p.cond = sync.NewCond(&p.mu)
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // cancelled parts are expected
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		p.mu.Lock()
		if r.Method == http.MethodPut {
			p.payloads = append(p.payloads, r.Header.Get("X-Amz-Content-Sha256"))
			p.puts = append(p.puts, r.URL.RawQuery)
		}
		if r.Method == http.MethodDelete && q.Has("uploadId") {
			p.aborted = true
		}
		part := r.Method == http.MethodPut && q.Has("partNumber")
		if part {
			p.arrived++
			p.inFlight++
			p.maxSeen = max(p.maxSeen, p.inFlight)
			p.cond.Broadcast()
			// Held until the uploader has as many parts out as it may, so the count
			// shows the bound rather than the timing; the deadline only keeps a broken
			// uploader from hanging the test.
			deadline := time.Now().Add(10 * time.Second)
			for p.inFlight < p.want && p.arrived < p.total && time.Now().Before(deadline) {
				go func() { time.Sleep(50 * time.Millisecond); p.cond.Broadcast() }()
				p.cond.Wait()
			}
		}
		fail := part && q.Get("partNumber") == p.failPart
		retry := r.Method == http.MethodPut && p.retryPut > 0
		if retry {
			p.retryPut--
		}
		p.mu.Unlock()
		if retry {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>try again</Message></Error>`)
		} else if fail {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>refused by the test</Message></Error>`)
		} else {
			rp.ServeHTTP(w, r)
		}
		if part {
			p.mu.Lock()
			p.inFlight--
			p.cond.Broadcast()
			p.mu.Unlock()
		}
	}))
	t.Cleanup(proxy.Close)
	s, err := NewS3(context.Background(), S3Config{Bucket: srv.Bucket, Endpoint: proxy.URL, PathStyle: true, Prefix: "wharf/"})
	if err != nil {
		t.Fatal(err)
	}
	s.partSize = 5 << 20 // the smallest S3 allows
	return s
}

// A multipart upload keeps at most partsInFlight parts out at once, and uses all of them;
// every upload is signed without a payload hash; the object reads back whole.
func TestS3MultipartPartsInFlightBounded(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	p := &s3Proxy{want: 3, total: 11}
	s := startS3Proxy(t, srv, p)
	s.partsInFlight = 3
	size := int64(10*s.partSize + 123) // 11 parts, the last a short one
	b, err := s.Put(ctx, 3000, persistence.PayloadUnpacked, &patternReader{left: size})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	maxSeen, arrived, payloads := p.maxSeen, p.arrived, p.payloads
	p.mu.Unlock()
	if maxSeen != 3 || arrived != 11 {
		t.Fatalf("%d parts uploaded, at most %d at once; want 11, 3 at once", arrived, maxSeen)
	}
	for _, h := range payloads {
		if h != "UNSIGNED-PAYLOAD" {
			t.Fatalf("an upload was signed with payload hash %q, want UNSIGNED-PAYLOAD", h)
		}
	}
	rc, err := s.Open(ctx, b.Key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, Verify(rc, persistence.Payload{Key: b.Key, Size: b.Size, SHA256: b.SHA256}))
	if err != nil || n != size || b.Size != size {
		t.Fatalf("read back %d of %d bytes (blob says %d): %v", n, size, b.Size, err)
	}
}

// A part the server refuses fails the Put with the part's error, aborts the upload, and
// leaves no object behind.
func TestS3MultipartPartFailureAborts(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	p := &s3Proxy{want: 1, total: 1, failPart: "4"}
	s := startS3Proxy(t, srv, p)
	_, err := s.Put(ctx, 3001, persistence.PayloadUnpacked, &patternReader{left: 12 * s.partSize})
	if err == nil || !strings.Contains(err.Error(), "upload part 4") || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("Put with a refused part: %v", err)
	}
	p.mu.Lock()
	aborted := p.aborted
	p.mu.Unlock()
	if !aborted {
		t.Fatal("the failed upload was not aborted")
	}
	key, _ := s.KeyOf(3001, persistence.PayloadUnpacked)
	if _, err := s.Open(ctx, key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("open after a failed upload: %v, want ErrNotFound", err)
	}
	ups, err := s.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(srv.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Fatalf("%d multipart uploads left in the bucket", len(ups.Uploads))
	}
}
