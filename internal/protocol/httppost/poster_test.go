package httppost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/product"
)

const (
	secretValue = "Bearer s3cr3t-t0ken"
	queryToken  = "q-t0ken-in-url"
)

type posterBundle struct {
	srv    *httptest.Server
	poster *Poster
	url    string
}

// setupPoster starts a loopback server with handler and a poster aimed at it, with a
// secret header and a token in the URL's query, which no reason may ever show.
func setupPoster(t *testing.T, handler http.HandlerFunc, mutate func(*PosterConfig)) *posterBundle {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	cfg := NewPosterConfig()
	cfg.URL = srv.URL + "/inbound?token=" + queryToken
	cfg.Headers = map[string]string{"X-Tenant": "north"}
	cfg.SecretHeaders = map[string]string{"Authorization": secretValue}
	if mutate != nil {
		mutate(cfg)
	}
	p, err := NewPoster(cfg, nil)
	if err != nil {
		t.Fatalf("NewPoster: %v", err)
	}
	t.Cleanup(p.Close)
	return &posterBundle{srv: srv, poster: p, url: cfg.URL}
}

func testAttempt(payload string) delivery.Attempt {
	sum := sha256.Sum256([]byte(payload))
	return delivery.Attempt{
		Delivery: persistence.Delivery{ID: 9, MessageID: 42},
		Message: persistence.Message{
			ID:               42,
			From:             "local",
			To:               "acme",
			OriginalFileName: "Rechnung März.xml",
			Size:             int64(len(payload)),
			SHA256:           hex.EncodeToString(sum[:]),
			CorrelationID:    "PO-4711",
			OriginEventID:    "erp-1",
		},
		Number: 1,
		Open: func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(payload)), nil
		},
	}
}

func (b *posterBundle) deliver(t *testing.T) delivery.Result {
	t.Helper()
	r := b.poster.Deliver(context.Background(), testAttempt("<invoice/>"))
	b.assertClean(t, r)
	return r
}

// assertClean checks a reason names neither the URL, the host nor a secret.
func (b *posterBundle) assertClean(t *testing.T, r delivery.Result) {
	t.Helper()
	if r.Err == nil {
		return
	}
	msg := r.Err.Error()
	for _, leak := range []string{secretValue, "s3cr3t", queryToken, b.url, b.srv.Listener.Addr().String(), "127.0.0.1", "http://"} {
		if strings.Contains(msg, leak) {
			t.Errorf("reason %q leaks %q", msg, leak)
		}
	}
}

func wantResult(t *testing.T, r delivery.Result, kind persistence.OutcomeKind, class delivery.ErrorClass, reason string) {
	t.Helper()
	t.Logf("result %s, class %q, reason %v", r.Kind, r.Class, r.Err)
	if r.Kind != kind {
		t.Fatalf("result %s (%v), want %s", r.Kind, r.Err, kind)
	}
	if r.Class != class {
		t.Errorf("class %q, want %q", r.Class, class)
	}
	if reason != "" && (r.Err == nil || r.Err.Error() != reason) {
		t.Errorf("reason %v, want %q", r.Err, reason)
	}
}

func TestPosterDelivers(t *testing.T) {
	var got *http.Request
	var body []byte
	b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) {
		got = r
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
	}, nil)
	wantResult(t, b.deliver(t), persistence.OutcomeDelivered, "", "")

	if got.Method != http.MethodPost || got.URL.Path != "/inbound" || got.URL.Query().Get("token") != queryToken {
		t.Errorf("request %s %s", got.Method, got.URL)
	}
	if string(body) != "<invoice/>" || got.ContentLength != int64(len("<invoice/>")) {
		t.Errorf("body %q with length %d", body, got.ContentLength)
	}
	want := map[string]string{
		"Content-Type":            DefaultContentType,
		"Authorization":           secretValue,
		"X-Tenant":                "north",
		"X-Wharf-Message-Id":      "42",
		"X-Wharf-From":            "local",
		"X-Wharf-To":              "acme",
		"X-Wharf-Filename":        "Rechnung%20M%C3%A4rz.xml",
		"X-Wharf-Sha256":          testAttempt("<invoice/>").Message.SHA256,
		"X-Wharf-Correlation-Id":  "PO-4711",
		"X-Wharf-Origin-Event-Id": "erp-1",
		"X-Wharf-Attempt":         "1",
		"Idempotency-Key":         "wharf-42-9",
		"Content-Disposition":     `attachment; filename="Rechnung M_rz.xml"; filename*=UTF-8''Rechnung%20M%C3%A4rz.xml`,
	}
	for k, v := range want {
		if g := got.Header.Get(k); g != v {
			t.Errorf("header %s = %q, want %q", k, g, v)
		}
	}
}

func TestPosterRetriesThenDelivers(t *testing.T) {
	var calls atomic.Int32
	var keys []string
	b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		if calls.Add(1) == 1 {
			http.Error(w, "maintenance "+r.Header.Get("Authorization"), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}, nil)
	wantResult(t, b.deliver(t), persistence.OutcomeRetry, delivery.ClassHTTP5xx, "HTTP 503 Service Unavailable")
	wantResult(t, b.deliver(t), persistence.OutcomeDelivered, "", "")
	if len(keys) != 2 || keys[0] != keys[1] {
		t.Errorf("idempotency keys %q, want the same key on both attempts", keys)
	}
}

func TestPosterStatuses(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		name       string
		status     int
		retryAfter string
		kind       persistence.OutcomeKind
		class      delivery.ErrorClass
		reason     string
		at         time.Time
	}{
		{"ok", 200, "", persistence.OutcomeDelivered, "", "", time.Time{}},
		{"no content", 204, "", persistence.OutcomeDelivered, "", "", time.Time{}},
		{"bad request", 400, "", persistence.OutcomeRetry, delivery.ClassHTTP4xx, "HTTP 400 Bad Request", time.Time{}},
		{"unauthorized", 401, "", persistence.OutcomeRetry, delivery.ClassHTTP4xx, "HTTP 401 Unauthorized", time.Time{}},
		{"not found", 404, "", persistence.OutcomeRetry, delivery.ClassHTTP4xx, "HTTP 404 Not Found", time.Time{}},
		{"request timeout", 408, "", persistence.OutcomeRetry, delivery.ClassThrottled, "HTTP 408 Request Timeout", time.Time{}},
		{"too early", 425, "", persistence.OutcomeRetry, delivery.ClassThrottled, "HTTP 425 Too Early", time.Time{}},
		{"too many requests, seconds", 429, "120", persistence.OutcomeRetry, delivery.ClassThrottled, "HTTP 429 Too Many Requests", now.Add(2 * time.Minute)},
		{"too many requests, date", 429, now.Add(time.Hour).Format(http.TimeFormat), persistence.OutcomeRetry, delivery.ClassThrottled, "HTTP 429 Too Many Requests", now.Add(time.Hour)},
		{"unavailable, date in the past", 503, now.Add(-time.Hour).Format(http.TimeFormat), persistence.OutcomeRetry, delivery.ClassHTTP5xx, "HTTP 503 Service Unavailable", now},
		{"unavailable, far away", 503, "99999999", persistence.OutcomeRetry, delivery.ClassHTTP5xx, "HTTP 503 Service Unavailable", now.Add(delivery.MaxRetryAfter)},
		{"unavailable, garbage", 503, "soon", persistence.OutcomeRetry, delivery.ClassHTTP5xx, "HTTP 503 Service Unavailable", time.Time{}},
		{"internal error", 500, "", persistence.OutcomeRetry, delivery.ClassHTTP5xx, "HTTP 500 Internal Server Error", time.Time{}},
		{"unknown status", 599, "", persistence.OutcomeRetry, delivery.ClassHTTP5xx, "HTTP 599", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, "error detail from "+r.URL.String())
			}, nil)
			b.poster.now = func() time.Time { return now }
			r := b.deliver(t)
			wantResult(t, r, tt.kind, tt.class, tt.reason)
			if !r.At.Equal(tt.at) {
				t.Errorf("retry at %v, want %v", r.At, tt.at)
			}
		})
	}
}

func TestPosterNeverFollowsRedirects(t *testing.T) {
	var followed atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/inbound", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { followed.Store(true) })
	b := setupPoster(t, mux.ServeHTTP, nil)
	wantResult(t, b.deliver(t), persistence.OutcomeRetry, delivery.ClassHTTP4xx, "redirect refused (status 302)")
	if followed.Load() {
		t.Fatal("the redirect was followed")
	}
}

func TestPosterTimeout(t *testing.T) {
	release := make(chan struct{})
	b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}, func(c *PosterConfig) { c.Timeout = delivery.Duration(100 * time.Millisecond) })
	defer close(release)
	wantResult(t, b.deliver(t), persistence.OutcomeRetry, delivery.ClassTimeout, "no response within 100ms")
}

func TestPosterTransportErrors(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		b := setupPoster(t, func(http.ResponseWriter, *http.Request) {}, func(c *PosterConfig) {
			c.URL = "http://" + addr + "/inbound?token=" + queryToken
		})
		r := b.poster.Deliver(context.Background(), testAttempt("x"))
		wantResult(t, r, persistence.OutcomeRetry, delivery.ClassTransport, "transport: connection refused")
		b.assertClean(t, r)
		if strings.Contains(r.Err.Error(), addr) {
			t.Errorf("reason %q names the address", r.Err)
		}
	})
	t.Run("connection dropped", func(t *testing.T) {
		b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}, nil)
		r := b.deliver(t)
		wantResult(t, r, persistence.OutcomeRetry, delivery.ClassTransport, "")
	})
	t.Run("TLS with an unknown authority", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
		srv.StartTLS()
		defer srv.Close()
		b := setupPoster(t, func(http.ResponseWriter, *http.Request) {}, func(c *PosterConfig) {
			c.URL = srv.URL + "/inbound?token=" + queryToken
		})
		b.srv = srv
		r := b.deliver(t)
		wantResult(t, r, persistence.OutcomeRetry, delivery.ClassTransport, "transport: TLS: certificate signed by an unknown authority")
	})
	t.Run("payload cannot be read", func(t *testing.T) {
		b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }, nil)
		a := testAttempt("0123456789")
		a.Open = func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(io.MultiReader(strings.NewReader("01234"), errReader{})), nil
		}
		r := b.poster.Deliver(context.Background(), a)
		wantResult(t, r, persistence.OutcomeRetry, delivery.ClassTransport, "cannot read the payload")
		b.assertClean(t, r)
	})
	t.Run("interrupted", func(t *testing.T) {
		entered := make(chan struct{})
		b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // the server notices a closed connection only after the body
			close(entered)
			<-r.Context().Done()
		}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-entered; cancel() }()
		r := b.poster.Deliver(ctx, testAttempt("x"))
		wantResult(t, r, persistence.OutcomeRetry, delivery.ClassTransport, "interrupted")
	})
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) {
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: io.ErrUnexpectedEOF}
}

func TestPosterEmptyPayload(t *testing.T) {
	var got []byte
	var length int64 = -2
	b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) {
		length = r.ContentLength
		got, _ = io.ReadAll(r.Body)
	}, nil)
	a := testAttempt("")
	wantResult(t, b.poster.Deliver(context.Background(), a), persistence.OutcomeDelivered, "", "")
	if length != 0 || len(got) != 0 {
		t.Errorf("empty payload sent as %d bytes (%q)", length, got)
	}
}

func TestHeaderEncoding(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain.txt", "plain.txt"},
		{"a b.txt", "a%20b.txt"},
		{"März", "M%C3%A4rz"},
		{`q"uote`, "q%22uote"},
	}
	for _, tt := range tests {
		if got := percentEncode(tt.in); got != tt.want {
			t.Errorf("percentEncode(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := headerSafe("id-1 ok"); got != "id-1 ok" {
		t.Errorf("headerSafe changed a printable id: %q", got)
	}
	if got := headerSafe("ïd\r\nX-Evil: 1"); strings.ContainsAny(got, "\r\n") {
		t.Errorf("headerSafe kept a line break: %q", got)
	}
	if got := asciiFallback(`Ä"b\c`); got != "__b_c" {
		t.Errorf("asciiFallback = %q", got)
	}
	var buf bytes.Buffer
	h := http.Header{}
	a := testAttempt("x")
	a.Message.CorrelationID = "a\nb"
	setMetadata(h, a)
	if err := h.Write(&buf); err != nil || strings.Contains(buf.String(), "a\nb") {
		t.Errorf("metadata carried a raw line break: %q", buf.String())
	}
}

// TestPosterUserAgent: the loopback server sees the product string, which follows the
// hide_version setting at each request.
func TestPosterUserAgent(t *testing.T) {
	seen := make(chan string, 2)
	b := setupPoster(t, func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("User-Agent")
	}, nil)
	b.deliver(t)
	if got := <-seen; got != product.String(false) {
		t.Errorf("User-Agent %q, want %q", got, product.String(false))
	}
	b.poster.product = func() string { return product.String(true) }
	b.deliver(t)
	if got := <-seen; got != "Wharf" {
		t.Errorf("User-Agent with the version hidden %q, want Wharf", got)
	}
}
