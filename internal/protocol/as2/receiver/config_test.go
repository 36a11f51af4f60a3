package receiver

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

func TestConfigDefaults(t *testing.T) {
	cfg, ok := NewConfig().(*Config)
	if !ok {
		t.Fatalf("NewConfig returns %T", NewConfig())
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"bind": "127.0.0.1", "port": 8081.0, "path": "/as2", "mdn_path": "/as2/mdn",
		"max_concurrent_requests": 32.0, "max_body_mib": 512.0, "read_timeout": "10m0s", "idle_timeout": "2m0s",
		"body_idle_timeout": "20s", "min_body_bytes_per_second": 8192.0, "max_requests_per_address": 16.0,
		"max_requests_per_partner": 16.0, "max_decompression_ratio": 100.0}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("%s = %v, want %v", k, fields[k], v)
		}
	}
	if _, ok := fields["tls_certificate_id"]; ok {
		t.Error("tls_certificate_id is written when unset")
	}
}

func TestConfigValidate(t *testing.T) {
	id := int64(0)
	tests := []struct {
		field  string
		change func(*Config)
	}{
		{"bind", func(c *Config) { c.Bind = "" }},
		{"bind", func(c *Config) { c.Bind = "not a host!" }},
		{"port", func(c *Config) { c.Port = 70000 }},
		{"path", func(c *Config) { c.Path = "as2" }},
		{"path", func(c *Config) { c.Path = "/as2/../x" }},
		{"path", func(c *Config) { c.Path = "/as2?x=1" }},
		{"mdn_path", func(c *Config) { c.MDNPath = c.Path }},
		{"mdn_path", func(c *Config) { c.MDNPath = "" }},
		{"tls_certificate_id", func(c *Config) { c.TLSCertificateID = &id }},
		{"max_concurrent_requests", func(c *Config) { c.MaxConcurrentRequests = 0 }},
		{"max_body_mib", func(c *Config) { c.MaxBodyMiB = 0 }},
		{"max_body_mib", func(c *Config) { c.MaxBodyMiB = MaxBodyMiBLimit + 1 }},
		{"read_timeout", func(c *Config) { c.ReadTimeout = 0 }},
		{"idle_timeout", func(c *Config) { c.IdleTimeout = delivery.Duration(48 * time.Hour) }},
		{"read_header_timeout", func(c *Config) { c.ReadHeaderTimeout = delivery.Duration(time.Hour) }},
		{"body_idle_timeout", func(c *Config) { c.BodyIdleTimeout = 0 }},
		{"body_idle_timeout", func(c *Config) { c.BodyIdleTimeout = delivery.Duration(time.Hour) }},
		{"min_body_bytes_per_second", func(c *Config) { c.MinBodyBytesPerSecond = -1 }},
		{"max_requests_per_address", func(c *Config) { c.MaxRequestsPerAddress = 0 }},
		{"max_requests_per_partner", func(c *Config) { c.MaxRequestsPerPartner = MaxConcurrentRequestsLimit + 1 }},
		{"max_decompression_ratio", func(c *Config) { c.MaxDecompressionRatio = 1 }},
	}
	for _, tt := range tests {
		cfg := newConfig()
		tt.change(cfg)
		var fe *persistence.FieldError
		if err := cfg.Validate(); !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: %v", tt.field, err)
		}
	}
	ok := newConfig()
	ok.Bind, ok.Port, ok.Path, ok.MDNPath = "0.0.0.0", 0, "/edi/as2", "/edi/mdn"
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
}
