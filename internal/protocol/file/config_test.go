package file

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// plainSealer stands in for the secret store; these configs have no write-only fields.
type plainSealer struct{}

func (plainSealer) Seal(b []byte) ([]byte, error) { return append([]byte("sealed:"), b...), nil }
func (plainSealer) Open(b []byte) ([]byte, error) {
	rest, ok := strings.CutPrefix(string(b), "sealed:")
	if !ok {
		return nil, errors.New("not sealed")
	}
	return []byte(rest), nil
}

func decodeError(t *testing.T, typ persistence.PluginType, body string) *persistence.FieldError {
	t.Helper()
	_, err := module.Decode(typ, []byte(body), nil, plainSealer{})
	if err == nil {
		return nil
	}
	var fe *persistence.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("Decode: %v is not a FieldError", err)
	}
	return fe
}

func TestPollerConfigDecode(t *testing.T) {
	in, err := module.Decode(persistence.PluginFilePoller, []byte(`{"name":"outbox","directory":"/srv/outbox"}`), nil, plainSealer{})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	cfg := in.Config.(*PollerConfig)
	if cfg.Pattern != "{to}/{filename}" || cfg.Organization != "local" || cfg.BatchSize != 100 ||
		time.Duration(cfg.Interval) != time.Second || time.Duration(cfg.StableFor) != time.Second {
		t.Errorf("defaults: %+v", cfg)
	}
	if got := cfg.unroutableDir(); got != "/srv/outbox/unroutable" {
		t.Errorf("unroutable directory %q", got)
	}
	rec, err := module.Encode(in, plainSealer{})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(rec.Config, &fields); err != nil {
		t.Fatal(err)
	}
	if fields["interval"] != "1s" || fields["stable_for"] != "1s" {
		t.Errorf("durations encode as %v, %v", fields["interval"], fields["stable_for"])
	}

	tests := []struct {
		name, body, field, msg string
	}{
		{"unknown field", `{"directory":"/srv/o","colour":"red"}`, "colour", "unknown field"},
		{"missing directory", `{}`, "directory", "required"},
		{"relative directory", `{"directory":"srv/o"}`, "directory", "absolute"},
		{"unknown placeholder", `{"directory":"/srv/o","pattern":"{to}/{name}"}`, "pattern", "unknown placeholder {name}"},
		{"placeholder inside a segment", `{"directory":"/srv/o","pattern":"in-{to}/{filename}"}`, "pattern", "whole segment"},
		{"filename not last", `{"directory":"/srv/o","pattern":"{filename}/{to}"}`, "pattern", "last"},
		{"no filename", `{"directory":"/srv/o","pattern":"{to}"}`, "pattern", "{filename}"},
		{"no recipient", `{"directory":"/srv/o","pattern":"{from}/{filename}"}`, "partner", "required"},
		{"bad partner", `{"directory":"/srv/o","pattern":"{filename}","partner":"ACME"}`, "partner", "invalid party name"},
		{"bad organization", `{"directory":"/srv/o","organization":"Local Org"}`, "organization", "invalid party name"},
		{"zero interval", `{"directory":"/srv/o","interval":"0s"}`, "interval", "positive"},
		{"interval of the wrong type", `{"directory":"/srv/o","interval":5}`, "interval", "Enter a duration"},
		{"batch size", `{"directory":"/srv/o","batch_size":0}`, "batch_size", "between"},
		{"relative processed directory", `{"directory":"/srv/o","processed_directory":"done"}`, "processed_directory", "absolute"},
		{"processed is the directory", `{"directory":"/srv/o","processed_directory":"/srv/o/"}`, "processed_directory", "differ"},
		{"processed is unroutable", `{"directory":"/srv/o","processed_directory":"/srv/o/unroutable"}`, "processed_directory", "unroutable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := decodeError(t, persistence.PluginFilePoller, withName(tt.body))
			if fe == nil {
				t.Fatal("accepted")
			}
			if fe.Field != tt.field || !strings.Contains(fe.Message, tt.msg) {
				t.Errorf("error %q: %q, want %q: …%s…", fe.Field, fe.Message, tt.field, tt.msg)
			}
		})
	}
	// A duration the text form refuses is refused too; the standard decoder cannot say
	// which field it was in.
	if fe := decodeError(t, persistence.PluginFilePoller, withName(`{"directory":"/srv/o","stable_for":"soon"}`)); fe == nil || !strings.Contains(fe.Message, "Enter a duration such as 30s") {
		t.Errorf("a bad duration: %v", fe)
	}
	// A fixed partner makes a pattern without {to} valid; stable_for 0 is allowed.
	if fe := decodeError(t, persistence.PluginFilePoller, withName(`{"directory":"/srv/o","pattern":"{filename}","partner":"acme","stable_for":"0s"}`)); fe != nil {
		t.Errorf("refused a valid config: %v", fe)
	}
}

func TestWriterConfigDecode(t *testing.T) {
	in, err := module.Decode(persistence.PluginFileWriter, []byte(`{"name":"inbox","directory":"/srv/inbox","max_concurrent":2,"retry":{"strategy":"fixed","base":"1m"}}`), nil, plainSealer{})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	cfg := in.Config.(*WriterConfig)
	if cfg.Pattern != DefaultWriterPattern || cfg.FileMode != "0640" || cfg.DirMode != "0750" || cfg.OnCollision != "suffix" {
		t.Errorf("defaults: %+v", cfg)
	}
	if opts := cfg.Options(); opts.MaxConcurrent != 2 || opts.Retry.Strategy != "fixed" {
		t.Errorf("target options: %+v", opts)
	}

	tests := []struct {
		name, body, field, msg string
	}{
		{"unknown field", `{"directory":"/srv/i","overwrites":true}`, "overwrites", "unknown field"},
		{"missing directory", `{}`, "directory", "required"},
		{"relative directory", `{"directory":"inbox"}`, "directory", "absolute"},
		{"unknown placeholders", `{"directory":"/srv/i","pattern":"{from}/{year}/{name}"}`, "pattern", "unknown placeholder {year}, {name}"},
		{"escaping pattern", `{"directory":"/srv/i","pattern":"../{original_filename}"}`, "pattern", "not allowed"},
		{"file mode", `{"directory":"/srv/i","file_mode":"rw-r-----"}`, "file_mode", "octal"},
		{"setuid mode", `{"directory":"/srv/i","file_mode":"4755"}`, "file_mode", "setuid"},
		{"dir mode", `{"directory":"/srv/i","dir_mode":"999"}`, "dir_mode", "octal"},
		{"max_concurrent", `{"directory":"/srv/i","max_concurrent":1000}`, "max_concurrent", "between"},
		{"retry", `{"directory":"/srv/i","retry":{"max_retries":5000}}`, "retry.max_retries", "between"},
		{"on_collision of the wrong type", `{"directory":"/srv/i","on_collision":true}`, "on_collision", "Enter text"},
		{"unknown on_collision", `{"directory":"/srv/i","on_collision":"rename"}`, "on_collision", "want one of suffix, overwrite, fail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := decodeError(t, persistence.PluginFileWriter, withName(tt.body))
			if fe == nil {
				t.Fatal("accepted")
			}
			if fe.Field != tt.field || !strings.Contains(fe.Message, tt.msg) {
				t.Errorf("error %q: %q, want %q: …%s…", fe.Field, fe.Message, tt.field, tt.msg)
			}
		})
	}
}

func withName(body string) string {
	if body == "{}" {
		return `{"name":"x"}`
	}
	return `{"name":"x",` + strings.TrimPrefix(body, "{")
}

func TestPluginsAreRegistered(t *testing.T) {
	for typ, role := range map[persistence.PluginType]module.Role{
		persistence.PluginFilePoller: module.RoleSource,
		persistence.PluginFileWriter: module.RoleTarget,
	} {
		p, ok := module.Lookup(typ)
		if !ok || p.Role != role {
			t.Errorf("%s: registered %v as %q", typ, ok, p.Role)
		}
	}
}
