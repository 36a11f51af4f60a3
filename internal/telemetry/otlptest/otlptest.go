// Package otlptest is an OTLP/HTTP collector for tests: it decodes what exporters post
// (protobuf, as the OpenTelemetry collector types define it) and keeps every span and
// log record for the test to inspect.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"wharf/internal/telemetry"
)

// Span is one exported span with its resource's attributes.
type Span struct {
	*tracepb.Span
	Resource map[string]string
	Scope    string
}

// TraceID and ID are the span's ids in hex; Parent is "" for a root span.
func (s Span) TraceID() string { return hex.EncodeToString(s.Span.TraceId) }
func (s Span) ID() string      { return hex.EncodeToString(s.SpanId) }
func (s Span) Parent() string  { return hex.EncodeToString(s.ParentSpanId) }

// Attr is the span attribute key as text, "" when absent.
func (s Span) Attr(key string) string { return attr(s.Attributes, key) }

// Log is one exported log record with its resource's attributes.
type Log struct {
	*logspb.LogRecord
	Resource map[string]string
}

// TraceID and SpanID are the record's trace context in hex.
func (l Log) TraceID() string { return hex.EncodeToString(l.LogRecord.TraceId) }
func (l Log) SpanID() string  { return hex.EncodeToString(l.LogRecord.SpanId) }

// Attr is the record attribute key as text, "" when absent.
func (l Log) Attr(key string) string { return attr(l.Attributes, key) }

// Collector is a running OTLP/HTTP receiver on loopback.
type Collector struct {
	URL string

	mu       sync.Mutex
	spans    []Span
	logs     []Log
	requests int
}

// Start runs a collector until the test ends.
func Start(t testing.TB) *Collector {
	c := &Collector{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		var req coltrace.ExportTraceServiceRequest
		if !decode(t, w, r, &req) {
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			res := resource(rs.Resource)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, Span{Span: s, Resource: res, Scope: ss.GetScope().GetName()})
				}
			}
		}
		c.mu.Unlock()
		answer(w, &coltrace.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/logs", func(w http.ResponseWriter, r *http.Request) {
		var req collogs.ExportLogsServiceRequest
		if !decode(t, w, r, &req) {
			return
		}
		c.mu.Lock()
		for _, rl := range req.ResourceLogs {
			res := resource(rl.Resource)
			for _, sl := range rl.ScopeLogs {
				for _, l := range sl.LogRecords {
					c.logs = append(c.logs, Log{LogRecord: l, Resource: res})
				}
			}
		}
		c.mu.Unlock()
		answer(w, &collogs.ExportLogsServiceResponse{})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.requests++
		c.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// Config exports traces and logs to the collector, as OTEL_EXPORTER_OTLP_ENDPOINT set to
// its URL would.
func (c *Collector) Config() telemetry.Config {
	return telemetry.Config{TracesURL: c.URL + "/v1/traces", LogsURL: c.URL + "/v1/logs"}
}

// Spans returns every span received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Logs returns every log record received so far.
func (c *Collector) Logs() []Log {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Log(nil), c.logs...)
}

// Requests counts the requests the collector was sent, of any kind.
func (c *Collector) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

func decode(t testing.TB, w http.ResponseWriter, r *http.Request, m proto.Message) bool {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err == nil {
		err = proto.Unmarshal(data, m)
	}
	if err != nil {
		t.Errorf("otlp collector: %s: %v", r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func answer(w http.ResponseWriter, m proto.Message) {
	data, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(data)
}

func resource(r *resourcepb.Resource) map[string]string {
	out := map[string]string{}
	for _, kv := range r.GetAttributes() {
		out[kv.Key] = text(kv.Value)
	}
	return out
}

func attr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return text(kv.Value)
		}
	}
	return ""
}

// text is a value as the test compares it: strings as they are, numbers in decimal.
func text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	default:
		return v.String()
	}
}

// patience bounds how long a test waits for what exporters send.
const patience = 30 * time.Second

// WaitSpan returns the first span match accepts, polling until one arrives; the test
// fails when none does within patience.
func (c *Collector) WaitSpan(t testing.TB, match func(Span) bool) Span {
	t.Helper()
	return wait(t, "span", c.Spans, match)
}

// WaitLog returns the first log record match accepts, polling until one arrives; the
// test fails when none does within patience.
func (c *Collector) WaitLog(t testing.TB, match func(Log) bool) Log {
	t.Helper()
	return wait(t, "log record", c.Logs, match)
}

func wait[T any](t testing.TB, what string, received func() []T, match func(T) bool) T {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		all := received()
		for _, x := range all {
			if match(x) {
				return x
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no such %s among the %d received", what, len(all))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Leaks describes each span received whose name, status, attributes or events contain
// one of needles: what a test of secrets expects to be empty.
func (c *Collector) Leaks(needles ...string) []string {
	var out []string
	for _, s := range c.Spans() {
		text := s.Name + " " + s.Status.String()
		for _, kv := range s.Attributes {
			text += " " + kv.Key + "=" + kv.Value.String()
		}
		for _, e := range s.Events {
			text += " " + e.String()
		}
		for _, n := range needles {
			if strings.Contains(text, n) {
				out = append(out, fmt.Sprintf("span %q holds %q: %s", s.Name, n, text))
			}
		}
	}
	return out
}
