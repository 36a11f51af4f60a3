package telemetry

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// What the HTTP instrumentation records of a failed request to a URL with a token (the
// URL, its query, headers, the error naming the URL) is stripped before export; Wharf's
// own attributes and status text stay.
func TestFilterStripsWhatMustNotLeave(t *testing.T) {
	const token = "tok3n-canary"
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(filterExporter{mem}))
	ctx := context.Background()

	_, client := tp.Tracer("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp").Start(ctx, "http-poster POST")
	client.SetAttributes(
		attribute.String("url.full", "https://hooks.example.com/in?token="+token),
		attribute.String("url.query", "token="+token),
		attribute.String("http.request.header.authorization", "Bearer "+token),
		attribute.String("http.request.method", "POST"),
		attribute.Int("http.response.status_code", 502),
	)
	client.RecordError(errors.New(`Post "https://hooks.example.com/in?token=` + token + `": EOF`))
	client.SetStatus(codes.Error, `Post "https://hooks.example.com/in?token=`+token+`": EOF`)
	client.End()

	_, own := tp.Tracer(scope).Start(ctx, "delivery attempt")
	own.SetAttributes(attribute.String("wharf.target", "inhouse"), attribute.String("payload", token))
	own.SetStatus(codes.Error, "retry")
	own.End()

	spans := mem.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans exported, want 2", len(spans))
	}
	for _, s := range spans {
		text := s.Name + " " + s.Status.Description
		for _, kv := range s.Attributes {
			text += " " + string(kv.Key) + "=" + kv.Value.Emit()
		}
		for _, e := range s.Events {
			for _, kv := range e.Attributes {
				text += " " + string(kv.Key) + "=" + kv.Value.Emit()
			}
		}
		if strings.Contains(text, token) || strings.Contains(text, "hooks.example.com") {
			t.Errorf("span %q exported %s", s.Name, text)
		}
	}
	client0, own0 := spans[0], spans[1]
	if client0.Status.Code != codes.Error || !hasAttr(client0.Attributes, "http.response.status_code") || !hasAttr(client0.Attributes, "http.request.method") {
		t.Errorf("client span lost what it may keep: %+v %v", client0.Status, client0.Attributes)
	}
	if own0.Status.Description != "retry" || !hasAttr(own0.Attributes, "wharf.target") {
		t.Errorf("Wharf's own span lost what it may keep: %+v %v", own0.Status, own0.Attributes)
	}
}

func hasAttr(kvs []attribute.KeyValue, key attribute.Key) bool {
	for _, kv := range kvs {
		if kv.Key == key {
			return true
		}
	}
	return false
}
