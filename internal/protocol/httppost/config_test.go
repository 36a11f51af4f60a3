package httppost

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// testSealer is a reversible stand-in for the secret store.
type testSealer struct{}

func (testSealer) Seal(b []byte) ([]byte, error) {
	out := slices.Clone(b)
	slices.Reverse(out)
	return append([]byte("sealed:"), out...), nil
}

func (testSealer) Open(b []byte) ([]byte, error) {
	rest, ok := strings.CutPrefix(string(b), "sealed:")
	if !ok {
		return nil, errors.New("not sealed")
	}
	out := []byte(rest)
	slices.Reverse(out)
	return out, nil
}

func TestPosterConfigDefaultsAndSecrets(t *testing.T) {
	body := `{"name":"erp","url":"https://erp.example/in?key=abc","headers":{"X-Tenant":"north"},"secret_headers":{"Authorization":"Bearer s3cr3t"}}`
	in, err := module.Decode(persistence.PluginHTTPPoster, []byte(body), nil, testSealer{})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	cfg := in.Config.(*PosterConfig)
	if time.Duration(cfg.Timeout) != 30*time.Second || cfg.ContentType != "application/octet-stream" {
		t.Errorf("defaults: %+v", cfg)
	}
	if got := cfg.WriteOnlyFields(); !slices.Equal(got, []string{"secret_headers"}) {
		t.Errorf("WriteOnlyFields() = %v", got)
	}

	rec, err := module.Encode(in, testSealer{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec.Config), "s3cr3t") || strings.Contains(string(rec.Config), "secret_headers") {
		t.Errorf("stored config shows the secret: %s", rec.Config)
	}
	if len(rec.Secrets) == 0 || strings.Contains(string(rec.Secrets), "s3cr3t") {
		t.Errorf("secret not sealed: %q", rec.Secrets)
	}
	shown, err := json.Marshal(module.Present(rec))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(shown), "s3cr3t") || !strings.Contains(string(shown), "X-Tenant") {
		t.Errorf("presented config: %s", shown)
	}

	// An update that leaves secret_headers out keeps them.
	upd, err := module.Decode(persistence.PluginHTTPPoster, []byte(`{"url":"https://erp.example/v2","headers":{}}`), &rec, testSealer{})
	if err != nil {
		t.Fatalf("Decode update: %v", err)
	}
	if got := upd.Config.(*PosterConfig).SecretHeaders["Authorization"]; got != "Bearer s3cr3t" {
		t.Errorf("secret after update = %q", got)
	}
	loaded, err := module.Load(rec, testSealer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.Config.(*PosterConfig).SecretHeaders["Authorization"]; got != "Bearer s3cr3t" {
		t.Errorf("secret after load = %q", got)
	}
}

func TestPosterConfigRefuses(t *testing.T) {
	tests := []struct {
		name, body, field, msg string
	}{
		{"unknown field", `"url":"https://a.example","tls_insecure_skip_verify":true`, "tls_insecure_skip_verify", "unknown field"},
		{"missing url", `"timeout":"5s"`, "url", "required"},
		{"ftp url", `"url":"ftp://a.example/x"`, "url", "http or https"},
		{"relative url", `"url":"/inbound"`, "url", "http or https"},
		{"no host", `"url":"https:///x"`, "url", "host"},
		{"credentials in the url", `"url":"https://user:pw@a.example/"`, "url", "credentials"},
		{"fragment", `"url":"https://a.example/#x"`, "url", "fragment"},
		{"zero timeout", `"url":"https://a.example","timeout":"0s"`, "timeout", "positive"},
		{"huge timeout", `"url":"https://a.example","timeout":"3h"`, "timeout", "at most"},
		{"content type", `"url":"https://a.example","content_type":"not a type"`, "content_type", "media type"},
		{"header name with a space", `"url":"https://a.example","headers":{"X Bad":"v"}`, "headers", "not allowed"},
		{"host header", `"url":"https://a.example","headers":{"host":"evil"}`, "headers", "Host"},
		{"content-length", `"url":"https://a.example","secret_headers":{"Content-Length":"1"}`, "secret_headers", "Content-Length"},
		{"hop-by-hop", `"url":"https://a.example","headers":{"Connection":"close"}`, "headers", "Connection"},
		{"own metadata", `"url":"https://a.example","headers":{"X-Wharf-From":"x"}`, "headers", "reserved"},
		{"idempotency key", `"url":"https://a.example","headers":{"Idempotency-Key":"x"}`, "headers", "Idempotency-Key"},
		{"header twice", `"url":"https://a.example","headers":{"authorization":"a"},"secret_headers":{"Authorization":"b"}`, "secret_headers", "already set"},
		{"line break in a value", `"url":"https://a.example","secret_headers":{"X-Key":"a\r\nX-Evil: 1"}`, "secret_headers", "control character"},
		{"max_concurrent", `"url":"https://a.example","max_concurrent":300`, "max_concurrent", "between"},
		{"headers of the wrong type", `"url":"https://a.example","headers":["a"]`, "headers", "Name: value per line"},
		{"handoff deadline without statuses", `"url":"https://a.example","handoff":{"deadline":"4h"}`, "handoff.statuses", "required"},
		{"handoff reference without statuses", `"url":"https://a.example","handoff":{"reference":{"header":"Location"}}`, "handoff.statuses", "required"},
		{"handoff on a non-2xx status", `"url":"https://a.example","handoff":{"statuses":[302],"deadline":"4h"}`, "handoff.statuses", "not a 2xx"},
		{"handoff status twice", `"url":"https://a.example","handoff":{"statuses":[202,202],"deadline":"4h"}`, "handoff.statuses", "twice"},
		{"handoff status as text", `"url":"https://a.example","handoff":{"statuses":["202"],"deadline":"4h"}`, "handoff.statuses", "whole numbers"},
		{"handoff without a deadline", `"url":"https://a.example","handoff":{"statuses":[202]}`, "handoff.deadline", "required"},
		{"handoff deadline too short", `"url":"https://a.example","handoff":{"statuses":[202],"deadline":"5s"}`, "handoff.deadline", "between"},
		{"handoff deadline too long", `"url":"https://a.example","handoff":{"statuses":[202],"deadline":"1000h"}`, "handoff.deadline", "between"},
		{"handoff reference in two places", `"url":"https://a.example","handoff":{"statuses":[202],"deadline":"4h","reference":{"header":"Location","json_field":"id"}}`, "handoff.reference", "not both"},
		{"handoff reference header name", `"url":"https://a.example","handoff":{"statuses":[202],"deadline":"4h","reference":{"header":"Job Id"}}`, "handoff.reference.header", "not a valid"},
		{"handoff reference json field", `"url":"https://a.example","handoff":{"statuses":[202],"deadline":"4h","reference":{"json_field":"a b"}}`, "handoff.reference.json_field", "top-level"},
		{"handoff unknown field", `"url":"https://a.example","handoff":{"statuses":[202],"deadline":"4h","poll":true}`, "poll", "unknown field"},
		{"await_completion negative", `"url":"https://a.example","await_completion":"-1m"`, "await_completion", "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"name":"p",` + tt.body + `}`
			_, err := module.Decode(persistence.PluginHTTPPoster, []byte(body), nil, testSealer{})
			var fe *persistence.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Decode: %v, want a FieldError", err)
			}
			if fe.Field != tt.field || !strings.Contains(fe.Message, tt.msg) {
				t.Errorf("error %q: %q, want %q: …%s…", fe.Field, fe.Message, tt.field, tt.msg)
			}
			if strings.Contains(fe.Message, "pw@") || strings.Contains(fe.Message, "X-Evil") {
				t.Errorf("message %q repeats a value", fe.Message)
			}
		})
	}
}
