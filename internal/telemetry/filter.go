package telemetry

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// allowedAttrs are the span attributes that leave the process besides Wharf's own
// (wharf.*). HTTP instrumentation records the full URL, the path and query, the
// user agent and peer addresses too; a URL may carry a token (a webhook's), a path a
// set-up link, so none of those is exported.
var allowedAttrs = map[attribute.Key]bool{
	"http.request.method":       true,
	"http.response.status_code": true,
	"http.route":                true,
	"server.address":            true,
	"server.port":               true,
	"url.scheme":                true,
	"network.protocol.version":  true,
	"error.type":                true,
	"exception.type":            true,
}

// filterExporter strips what must not leave the process from each span before the OTLP
// exporter sees it: attributes outside the allow-list (on the span and its events), and
// the status text of spans that are not Wharf's own, which for a failed HTTP request is
// the client's error naming the URL.
type filterExporter struct{ sdktrace.SpanExporter }

func (f filterExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = scrub(s)
	}
	return f.SpanExporter.ExportSpans(ctx, out)
}

func scrub(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	stub := tracetest.SpanStubFromReadOnlySpan(s)
	stub.Attributes = allowed(stub.Attributes)
	for i := range stub.Events {
		stub.Events[i].Attributes = allowed(stub.Events[i].Attributes)
	}
	if stub.InstrumentationScope.Name != scope && stub.Status.Code == codes.Error {
		stub.Status.Description = ""
	}
	return stub.Snapshot()
}

func allowed(in []attribute.KeyValue) []attribute.KeyValue {
	out := in[:0:0]
	for _, kv := range in {
		if allowedAttrs[kv.Key] || strings.HasPrefix(string(kv.Key), "wharf.") {
			out = append(out, kv)
		}
	}
	return out
}
