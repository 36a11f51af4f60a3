package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A client that sends half an unauthenticated upload and stops gets its 401 at once,
// and the connection is closed: nothing waits for the rest of the body. The gateway
// still serves others meanwhile.
func TestHalfSentBody(t *testing.T) {
	h := start(t, "")
	conn, err := net.Dial("tcp", h.g.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"+
		"Content-Length: 100000\r\n\r\n%s", strings.Repeat("x", 1000))
	// Far within the server's own time-outs (the body's idle time-out is 30 s).
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a half-sent body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("HTTP %d, want 401", resp.StatusCode)
	}
	if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("connection still open after the answer: %d, %v", n, err)
	}
	if status := h.do(http.MethodGet, "/api/v1/messages", "", nil, nil); status != http.StatusOK {
		t.Errorf("GET messages: %d", status)
	}
}
