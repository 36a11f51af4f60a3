package bodyrate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serve runs handler behind Handler on a loopback server and returns its address.
func serve(t *testing.T, l Limits, handler http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(Handler(handler, l))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// open sends a POST's header section declaring length bytes of body, and first.
func open(t *testing.T, addr string, length int, first string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", length, first); err != nil {
		t.Fatal(err)
	}
	return conn
}

// answer reads the response on conn, within a bound far above any limit in these tests.
func answer(t *testing.T, conn net.Conn) *http.Response {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	resp.Body.Close()
	return resp
}

// A body that stops, or trickles below the minimum rate, fails to read with ErrTooSlow;
// one that keeps the pace is read whole.
func TestPace(t *testing.T) {
	tests := []struct {
		name  string
		send  func(conn net.Conn, stop <-chan struct{})
		wantN int // -1: ErrTooSlow
	}{
		{"stops", func(net.Conn, <-chan struct{}) {}, -1},
		{"trickles", func(conn net.Conn, stop <-chan struct{}) {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := conn.Write([]byte("x")); err != nil {
						return
					}
				}
			}
		}, -1},
		{"keeps the pace", func(conn net.Conn, _ <-chan struct{}) {
			conn.Write([]byte(strings.Repeat("x", 999)))
		}, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan error, 1)
			read := make(chan int, 1)
			addr := serve(t, Limits{Idle: 300 * time.Millisecond, MinRate: 1000, Whole: time.Minute},
				func(w http.ResponseWriter, r *http.Request) {
					b, err := io.ReadAll(r.Body)
					read <- len(b)
					got <- err
					w.WriteHeader(http.StatusNoContent)
				})
			conn := open(t, addr, 1000, "x")
			stop := make(chan struct{})
			defer close(stop)
			go tt.send(conn, stop)
			n, err := <-read, <-got
			switch {
			case tt.wantN < 0 && !errors.Is(err, ErrTooSlow):
				t.Errorf("read %d bytes, err %v; want ErrTooSlow", n, err)
			case tt.wantN >= 0 && (err != nil || n != tt.wantN):
				t.Errorf("read %d bytes, err %v; want %d", n, err, tt.wantN)
			}
		})
	}
}

// Once the body is read whole, handling it may take longer than the idle time-out:
// the request is not cancelled.
func TestAfterTheBody(t *testing.T) {
	ctxErr := make(chan error, 1)
	addr := serve(t, Limits{Idle: 100 * time.Millisecond, MinRate: 1000, Whole: time.Minute},
		func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second): // work past the body's deadlines
			}
			ctxErr <- r.Context().Err()
			w.WriteHeader(http.StatusNoContent)
		})
	conn := open(t, addr, 4, "full")
	if resp := answer(t, conn); resp.StatusCode != http.StatusNoContent {
		t.Errorf("HTTP %d", resp.StatusCode)
	}
	if err := <-ctxErr; err != nil {
		t.Errorf("request cancelled after its body was read: %v", err)
	}
}

// A handler that answers without reading the body (a refusal) is answered at once,
// and the connection closed, though the client sent half its body and stopped; the
// body's own deadline is far away.
func TestAnswerBeforeTheBody(t *testing.T) {
	addr := serve(t, Limits{Idle: time.Hour, Whole: time.Hour}, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "sign in first", http.StatusUnauthorized)
	})
	conn := open(t, addr, 100000, strings.Repeat("x", 1000))
	if resp := answer(t, conn); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("connection not closed after the answer: %v", err)
	}
}

// A request without a body (an event stream) keeps the server's deadlines only.
func TestNoBody(t *testing.T) {
	ctxErr := make(chan error, 1)
	addr := serve(t, Limits{Idle: 50 * time.Millisecond, MinRate: 1000}, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(500 * time.Millisecond):
		}
		ctxErr <- r.Context().Err()
	})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	answer(t, conn)
	if err := <-ctxErr; err != nil {
		t.Errorf("bodiless request cancelled: %v", err)
	}
}
