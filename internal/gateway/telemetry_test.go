package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/telemetry"
	"wharf/internal/telemetry/otlptest"
)

// With the OTLP endpoint set, a message's trace starts at dispatch, is stored with it,
// and the http-poster's attempt sends it on as traceparent from its client span; unset,
// there is no exporter, no trace parent stored and no traceparent sent.
func TestTraceParentToHTTPPoster(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	for _, traced := range []bool{false, true} {
		t.Run("traced="+strconv.FormatBool(traced), func(t *testing.T) {
			col := otlptest.Start(t)
			var tel telemetry.Config
			if traced {
				tel = col.Config()
			}
			gw := gatewaytest.Start(t, gatewaytest.Options{Telemetry: tel})
			h := &harness{t: t, g: gw.Gateway, gw: gw, data: gw.DataDir}
			if gw.Telemetry.Tracing() != traced || (gw.Telemetry.LogHandler(nil) != nil) != traced {
				t.Fatalf("tracing %v, logs exported %v; want both %v", gw.Telemetry.Tracing(), gw.Telemetry.LogHandler(nil) != nil, traced)
			}
			srv, sent := traceparents(t)
			h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
			h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{"name": "inhouse", "url": srv.URL + "/in", "enabled": true}, nil)
			h.mustJSON("POST", "/api/v1/services/http-poster/inhouse/start", map[string]any{}, nil)
			m := h.send("local", "acme", "inhouse", "a.edi", []byte("document"))
			h.waitStatus(m.ID, "delivered")

			stored, err := gw.Store.GetMessage(context.Background(), m.ID)
			if err != nil {
				t.Fatal(err)
			}
			header := sent()[0]
			if !traced {
				if stored.TraceParent != "" || header != "" {
					t.Fatalf("untraced: stored trace parent %q, traceparent sent %q; want neither", stored.TraceParent, header)
				}
				if n := col.Requests(); n != 0 {
					t.Fatalf("untraced: the collector got %d requests", n)
				}
				return
			}
			trace := strings.Split(stored.TraceParent, "-")
			posted := strings.Split(header, "-")
			if len(trace) != 4 || len(posted) != 4 || posted[1] != trace[1] {
				t.Fatalf("stored trace parent %q, traceparent sent %q: want one trace", stored.TraceParent, header)
			}
			client := col.WaitSpan(t, func(s otlptest.Span) bool { return s.ID() == posted[2] })
			attempt := col.WaitSpan(t, func(s otlptest.Span) bool { return s.ID() == client.Parent() })
			if client.Name != "http-poster POST" || attempt.Name != "delivery attempt" || attempt.Parent() != trace[2] {
				t.Errorf("client span %q under %q (parent %s); want http-poster POST under the attempt under the dispatch span %s",
					client.Name, attempt.Name, attempt.Parent(), trace[2])
			}
			if attempt.Attr("wharf.target") != "inhouse" || attempt.Attr("wharf.outcome") != "delivered" {
				t.Errorf("attempt span target %q outcome %q", attempt.Attr("wharf.target"), attempt.Attr("wharf.outcome"))
			}
		})
	}
}

// A webhook that tells of a failed delivery sends the trace on from its client span; no
// span of the failing http-poster or the webhook shows their URLs' tokens or headers.
func TestWebhookTracedWithoutItsSecrets(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	col := otlptest.Start(t)
	gw := gatewaytest.Start(t, gatewaytest.Options{Telemetry: col.Config()})
	h := &harness{t: t, g: gw.Gateway, gw: gw, data: gw.DataDir}
	hook, hooked := traceparents(t)
	h.failingPoster()
	h.mustJSON("POST", "/api/v1/plugins/configs/notification-webhook", map[string]any{"name": "ops",
		"url": hook.URL + "/hook?key=CANARY-hook-url", "format": "generic",
		"headers": map[string]string{"Authorization": "Bearer CANARY-hook-header"}}, nil)
	h.mustJSON("POST", "/api/v1/services/notification-webhook/ops/start", map[string]any{}, nil)

	m := h.send("local", "acme", "picky", "invoice.edi", []byte("CANARY-payload"))
	h.waitStatus(m.ID, "error")
	var header string
	poll(t, "the webhook", func() bool {
		if got := hooked(); len(got) > 0 {
			header = got[0]
		}
		return header != ""
	})
	posted := strings.Split(header, "-")
	if len(posted) != 4 {
		t.Fatalf("traceparent %q", header)
	}
	client := col.WaitSpan(t, func(s otlptest.Span) bool { return s.ID() == posted[2] })
	if client.Name != "notification-webhook POST" {
		t.Errorf("the webhook's traceparent names span %q", client.Name)
	}
	col.WaitSpan(t, func(s otlptest.Span) bool { return s.Name == "http-poster POST" })
	for _, leak := range col.Leaks("CANARY", "?", "http://") {
		t.Error(leak)
	}
}

// traceparents is a server answering 200 that keeps the traceparent header of each
// request; the function returns them in order.
func traceparents(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}
