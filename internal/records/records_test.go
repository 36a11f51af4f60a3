package records

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	_ "wharf/internal/protocol/file"
)

func TestParseDisplayName(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"ACME Corp", "ACME Corp", true},
		{"  padded\t", "padded", true},
		{"", "", true},
		{"Müller & Söhne GmbH", "Müller & Söhne GmbH", true},
		{strings.Repeat("é", 200), strings.Repeat("é", 200), true},
		{strings.Repeat("x", 201), "", false},
		{"bell\a", "", false},
		{"line\nbreak", "", false},
		{"del\x7f", "", false},
		{"bad \xff utf8", "", false},
	}
	for _, tt := range tests {
		got, err := ParseDisplayName(tt.in)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseDisplayName(%q) = %q, %v", tt.in, got, err)
		}
		var fe *persistence.FieldError
		if err != nil && (!errors.As(err, &fe) || fe.Field != "display_name") {
			t.Errorf("ParseDisplayName(%q): error %v does not name display_name", tt.in, err)
		}
	}
}

// fieldsOf lists the fields a (joined) error names.
func fieldsOf(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		switch x := e.(type) {
		case *persistence.FieldError:
			out = append(out, x.Field)
		case interface{ Unwrap() []error }:
			for _, c := range x.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(x.Unwrap())
		}
	}
	walk(err)
	return out
}

type seeded struct {
	store *db.Store
	dir   string
}

func seed(t *testing.T, s *db.Store) seeded {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	for _, p := range []struct {
		kind persistence.PartyKind
		name string
	}{{persistence.PartyOrganization, "local"}, {persistence.PartyPartner, "acme"}} {
		if _, err := CreateParty(ctx, s, p.kind, PartyInput{Name: p.name}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		typ  persistence.PluginType
		name string
	}{{persistence.PluginFilePoller, "outbox"}, {persistence.PluginFileWriter, "inbox"}} {
		body := fmt.Sprintf(`{"name":%q,"directory":%q}`, c.name, filepath.Join(dir, c.name))
		if _, err := SavePluginConfig(ctx, s, nil, c.typ, "", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	return seeded{store: s, dir: dir}
}

func TestCreateRoute(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		seed(t, s)
		ctx := context.Background()
		tests := []struct {
			name   string
			in     RouteInput
			fields []string
			err    error
		}{
			{"valid", RouteInput{Source: "outbox", From: "local", To: "*", Target: "inbox"}, nil, nil},
			{"redundant", RouteInput{Source: "outbox", From: "*", To: "*", Target: "inbox"}, nil, persistence.ErrConflict},
			{"syntax", RouteInput{Source: "Out", From: "", To: "a b", Target: ""}, []string{"source", "from", "to", "target"}, nil},
			{"missing instances", RouteInput{Source: "nope", From: "*", To: "*", Target: "gone"}, []string{"source", "target"}, nil},
			{"roles swapped", RouteInput{Source: "inbox", From: "*", To: "*", Target: "outbox"}, []string{"source", "target"}, nil},
			{"unknown parties", RouteInput{Source: "outbox", From: "x", To: "y", Target: "inbox"}, []string{"from", "to"}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := CreateRoute(ctx, s, tt.in)
				switch {
				case tt.fields == nil && tt.err == nil:
					if err != nil {
						t.Fatal(err)
					}
				case tt.err != nil:
					var rre *RedundantRouteError
					if !errors.Is(err, tt.err) || !errors.As(err, &rre) || rre.Existing.ID == 0 {
						t.Fatalf("err = %v, want a RedundantRouteError", err)
					}
				default:
					if got := fieldsOf(err); fmt.Sprint(got) != fmt.Sprint(tt.fields) {
						t.Fatalf("fields %v (%v), want %v", got, err, tt.fields)
					}
				}
			})
		}
		routes, err := s.ListRoutes(ctx)
		if err != nil || len(routes) != 1 {
			t.Errorf("routes %v, %v", routes, err)
		}
	})
}

func TestSavePluginConfig(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		sd := seed(t, s)
		ctx := context.Background()
		body := fmt.Sprintf(`{"name":"manual","directory":%q}`, sd.dir)
		if _, err := SavePluginConfig(ctx, s, nil, persistence.PluginFilePoller, "", []byte(body)); fmt.Sprint(fieldsOf(err)) != "[name]" {
			t.Errorf("reserved name: %v", err)
		}
		// Update through the wrong type is not found.
		if _, err := SavePluginConfig(ctx, s, nil, persistence.PluginFileWriter, "outbox", []byte(`{}`)); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("wrong type: %v", err)
		}
		rec, err := SavePluginConfig(ctx, s, nil, persistence.PluginFilePoller, "outbox", []byte(fmt.Sprintf(`{"enabled":false,"directory":%q}`, sd.dir)))
		if err != nil || rec.Enabled || rec.Name != "outbox" {
			t.Errorf("update: %+v, %v", rec, err)
		}
	})
}

func TestUpdateSettings(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		err := UpdateSettings(ctx, s, map[string]string{"max_dispatches": "8", "lease_duration": "1h", "colour": "red"})
		if got := fmt.Sprint(fieldsOf(err)); got != "[colour lease_duration]" {
			t.Fatalf("fields %s (%v)", got, err)
		}
		if v, err := s.ListSettings(ctx); err != nil || len(v) != 0 {
			t.Fatalf("a refused update wrote %v (%v)", v, err)
		}
		if err := UpdateSettings(ctx, s, map[string]string{"max_dispatches": "8"}); err != nil {
			t.Fatal(err)
		}
		if v, err := s.GetSetting(ctx, "max_dispatches"); err != nil || v != "8" {
			t.Fatalf("stored %q, %v", v, err)
		}
	})
}

// countingIngester records what reaches it.
type countingIngester struct{ items []module.Incoming }

func (c *countingIngester) Ingest(ctx context.Context, items []module.Incoming) ([]module.IngestResult, error) {
	c.items = append(c.items, items...)
	out := make([]module.IngestResult, len(items))
	for i, it := range items {
		io.Copy(io.Discard, it.Body)
		out[i].Message = persistence.Message{ID: int64(i + 1), Source: it.Source, From: it.From, To: it.To}
	}
	return out, nil
}

func TestSendMessage(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		seed(t, s)
		ctx := context.Background()
		base := SendInput{From: "local", To: "acme", Target: "inbox", FileName: "a.edi", Actor: "token:t"}
		tests := []struct {
			name   string
			edit   func(*SendInput)
			fields []string
			source persistence.InstanceName
		}{
			{"to a target", func(*SendInput) {}, nil, ManualSource},
			{"from a source", func(in *SendInput) { in.Target, in.Source = "", "outbox" }, nil, "outbox"},
			{"neither", func(in *SendInput) { in.Target = "" }, []string{"target"}, ""},
			{"traversal", func(in *SendInput) { in.FileName = "../x.edi" }, []string{"file"}, ""},
			{"invalid party", func(in *SendInput) { in.From = "X" }, []string{"from"}, ""},
			{"unknown parties", func(in *SendInput) { in.From, in.To = "nobody", "none" }, []string{"from", "to"}, ""},
			{"roles swapped", func(in *SendInput) { in.Target, in.Source = "outbox", "inbox" }, []string{"source", "target"}, ""},
			{"long correlation id", func(in *SendInput) { in.CorrelationID = strings.Repeat("c", 256) }, []string{"correlation_id"}, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ing := &countingIngester{}
				in := base
				in.Body = strings.NewReader("doc")
				tt.edit(&in)
				m, err := SendMessage(ctx, s, ing, in)
				if tt.fields != nil {
					if got := fmt.Sprint(fieldsOf(err)); got != fmt.Sprint(tt.fields) {
						t.Fatalf("fields %s (%v), want %v", got, err, tt.fields)
					}
					if len(ing.items) != 0 {
						t.Fatal("refused input reached the ingester")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if m.Source != tt.source || len(ing.items) != 1 || ing.items[0].Actor != "token:t" {
					t.Errorf("message %+v, items %+v", m, ing.items)
				}
			})
		}
	})
}

func TestUpdateSettingsS3NeedsABucket(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		err := UpdateSettings(ctx, s, map[string]string{"payload_storage": "s3"})
		if got := fmt.Sprint(fieldsOf(err)); got != "[s3_bucket]" {
			t.Fatalf("S3 without a bucket: fields %s (%v)", got, err)
		}
		if v, err := s.ListSettings(ctx); err != nil || len(v) != 0 {
			t.Fatalf("a refused update wrote %v (%v)", v, err)
		}
		if err := UpdateSettings(ctx, s, map[string]string{"payload_storage": "s3", "s3_bucket": "payloads"}); err != nil {
			t.Fatal(err)
		}
		if err := UpdateSettings(ctx, s, map[string]string{"s3_bucket": ""}); err == nil {
			t.Fatal("emptying the bucket while S3 is chosen was accepted")
		}
	})
}
