package as2_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/telemetry/otlptest"
)

// Secrets the traced exchange carries in its payload, its request's query and its
// Authorization header; no exported span may hold any of them.
const (
	payloadCanary = "CANARY-PAYLOAD-7f3e"
	queryCanary   = "CANARY-QUERY-91ab"
)

// An AS2 exchange between two gateways that export to one collector is one trace per
// message: A's request, dispatch and attempt, then B's receiver, dispatch and attempt,
// B's receiver span a descendant of A's attempt span. A's attempt span carries its ids,
// target, number and outcome; the log line of the attempt carries its trace and span
// beside message_id; nothing exported carries a URL query, a token or payload bytes.
func TestExchangeIsOneTracePerMessage(t *testing.T) {
	// Spans and records go out at once rather than every few seconds.
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_BLRP_SCHEDULE_DELAY", "50")
	eachGatewayDB(t, func(t *testing.T, url string) {
		col := otlptest.Start(t)
		a := startPeer(t, "WHARF-A", url, col.Config())
		b := startPeer(t, "WHARF-B", "", col.Config())
		connect(t, a, b)
		// An async MDN makes A's attempt log at info level with its context.
		var ra map[string]any
		a.do("GET", "/api/v1/as2/remote-profiles/b", "", nil, &ra)
		ra["mdn_mode"] = "async"
		// A partner's URL may hold a token in its query; the client span must not show it.
		ra["endpoint_url"] = b.as2 + "/as2?key=" + queryCanary
		a.json("PUT", "/api/v1/as2/remote-profiles/b", ra, nil)

		doc := []byte(strings.Repeat(payloadCanary+" ", 512))
		var sent messageView
		a.multipart("/api/v1/messages?note="+queryCanary, map[string]string{"from": "local", "to": "b", "target": "as2_sender_default"},
			"traced.txt", doc, &sent)
		waitFile(t, filepath.Join(b.data, "inbox", "a", "traced.txt"), doc)

		instA, instB := resourceOf(t, col, a), resourceOf(t, col, b)
		id := strconv.FormatInt(sent.ID, 10)
		attempt := col.WaitSpan(t, func(s otlptest.Span) bool {
			return s.Resource["service.instance.id"] == instA && s.Name == "delivery attempt" && s.Attr("wharf.message_id") == id
		})
		for k, want := range map[string]string{"wharf.target": "as2_sender_default", "wharf.attempt": "1", "wharf.outcome": "awaiting_ack"} {
			if got := attempt.Attr(k); got != want {
				t.Errorf("A's attempt span %s = %q, want %q", k, got, want)
			}
		}
		if attempt.Resource["service.name"] != "wharf" {
			t.Errorf("service.name = %q, want wharf", attempt.Resource["service.name"])
		}
		trace := attempt.TraceID()
		bRecv := col.WaitSpan(t, func(s otlptest.Span) bool {
			return s.Resource["service.instance.id"] == instB && s.Name == "POST /as2" && s.TraceID() == trace
		})
		bAttempt := col.WaitSpan(t, func(s otlptest.Span) bool {
			return s.Resource["service.instance.id"] == instB && s.Name == "delivery attempt" && s.TraceID() == trace
		})
		spans := col.Spans()
		if !descends(spans, bRecv, attempt.ID()) {
			t.Errorf("B's receiver span does not descend from A's attempt span")
		}
		if !descends(spans, bAttempt, bRecv.ID()) {
			t.Errorf("B's attempt span does not descend from B's receiver span")
		}
		aRequest := col.WaitSpan(t, func(s otlptest.Span) bool {
			return s.Resource["service.instance.id"] == instA && s.Name == "POST /api/v1/messages" && s.TraceID() == trace
		})
		if !descends(spans, attempt, aRequest.ID()) {
			t.Errorf("A's attempt span does not descend from the request that sent the message")
		}

		// B's async MDN goes out in a span of its own that A's MDN path continues.
		mdnSend := col.WaitSpan(t, func(s otlptest.Span) bool {
			return s.Resource["service.instance.id"] == instB && s.Name == "as2 mdn send"
		})
		col.WaitSpan(t, func(s otlptest.Span) bool {
			return s.Resource["service.instance.id"] == instA && s.Name == "POST /as2/mdn" && s.Parent() == mdnSend.ID()
		})

		rec := col.WaitLog(t, func(l otlptest.Log) bool {
			return l.Resource["service.instance.id"] == instA && l.Attr("message_id") == id && l.SpanID() == attempt.ID()
		})
		if rec.TraceID() != trace || rec.Attr("trace_id") != trace || rec.Attr("span_id") != attempt.ID() {
			t.Errorf("log record %q: trace %s/%s span attribute %s, want trace %s span %s", rec.Body.String(),
				rec.TraceID(), rec.Attr("trace_id"), rec.Attr("span_id"), trace, attempt.ID())
		}

		for _, leak := range col.Leaks(payloadCanary, queryCanary, gatewaytest.Token, "?", "http://") {
			t.Error(leak)
		}
	})
}

// resourceOf is the service.instance.id of the peer's spans: the one whose request
// served its REST API on its own address.
func resourceOf(t *testing.T, col *otlptest.Collector, p *peer) string {
	t.Helper()
	port := p.gw.Addr()[strings.LastIndexByte(p.gw.Addr(), ':')+1:]
	s := col.WaitSpan(t, func(s otlptest.Span) bool {
		return s.Kind.String() == "SPAN_KIND_SERVER" && s.Attr("server.port") == port && strings.HasPrefix(s.Name, "POST /api/v1/")
	})
	return s.Resource["service.instance.id"]
}

// descends reports whether s has the span id ancestor among its parents.
func descends(spans []otlptest.Span, s otlptest.Span, ancestor string) bool {
	byID := map[string]otlptest.Span{}
	for _, x := range spans {
		byID[x.ID()] = x
	}
	for range len(spans) {
		if s.Parent() == ancestor {
			return true
		}
		p, ok := byID[s.Parent()]
		if !ok {
			return false
		}
		s = p
	}
	return false
}

func waitFile(t *testing.T, path string, want []byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err == nil && bytes.Equal(data, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written: %v", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
