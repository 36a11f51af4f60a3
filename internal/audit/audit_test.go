package audit

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func sampleEvent() Event {
	return Event{
		ID:         7,
		Time:       time.Date(2026, 11, 30, 12, 34, 56, 789012000, time.UTC),
		Actor:      "user:alice",
		Action:     "update",
		Kind:       "partner",
		RecordID:   "acme",
		RecordName: "acme",
		Changes: []Change{
			{Path: "display_name", Old: json.RawMessage(`"ACME"`), New: json.RawMessage(`"ACME Corp"`)},
			SecretChange("secrets"),
		},
	}
}

// TestEncodeGolden holds the hashed encoding still: a change here breaks every stored
// chain, so it needs a new EncodingVersion instead.
func TestEncodeGolden(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	e := sampleEvent()
	got := hex.Dump(Encode(e)) + "hash after empty prev: " + hex.EncodeToString(Chain(key, nil, e)) + "\n"
	path := filepath.Join("testdata", "encode_v1.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("encoding changed:\n%s\nwant:\n%s", got, want)
	}
}

func TestDiff(t *testing.T) {
	type tls struct {
		MinVersion string `json:"min_version"`
		Trust      []int  `json:"trust"`
	}
	type rec struct {
		Name      string    `json:"name"`
		Password  string    `json:"password"`
		TLS       tls       `json:"tls"`
		UpdatedAt time.Time `json:"updated_at"`
	}
	a := rec{Name: "a", Password: "canary-old-secret", TLS: tls{"1.2", []int{1}}, UpdatedAt: time.Unix(1, 0)}
	b := rec{Name: "b", Password: "canary-new-secret", TLS: tls{"1.3", []int{1, 2}}, UpdatedAt: time.Unix(2, 0)}
	for _, tc := range []struct {
		name          string
		before, after any
		want          string
	}{
		{"update", a, b, `[{"path":"name","old":"a","new":"b"},{"path":"password","secret":true},` +
			`{"path":"tls.min_version","old":"1.2","new":"1.3"},{"path":"tls.trust","old":[1],"new":[1,2]}]`},
		{"create", nil, a, `[{"path":"name","new":"a"},{"path":"password","secret":true},` +
			`{"path":"tls.min_version","new":"1.2"},{"path":"tls.trust","new":[1]}]`},
		{"delete", a, nil, `[{"path":"name","old":"a"},{"path":"password","secret":true},` +
			`{"path":"tls.min_version","old":"1.2"},{"path":"tls.trust","old":[1]}]`},
		{"same", a, a, `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := Diff(tc.before, tc.after, "password")
			if err != nil {
				t.Fatal(err)
			}
			if got := string(ChangesJSON(cs)); got != tc.want {
				t.Errorf("Diff =\n%s\nwant\n%s", got, tc.want)
			}
			if bytes.Contains(ChangesJSON(cs), []byte("canary")) {
				t.Errorf("a secret value is in the changes: %s", ChangesJSON(cs))
			}
		})
	}
	if _, err := Diff("text", nil); err == nil {
		t.Error("Diff of a non-object succeeded")
	}
}

func TestVerifier(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	var log []Event
	var prev []byte
	for i := int64(1); i <= 5; i++ {
		e := sampleEvent()
		e.ID, e.PrevHash = i, prev
		e.Hash = Chain(key, prev, e)
		prev = e.Hash
		log = append(log, e)
	}
	run := func(events []Event) []Problem {
		v := NewVerifier(key, 0, nil)
		for _, e := range events {
			v.Add(e)
		}
		_, p := v.Result()
		return p
	}
	if p := run(log); len(p) != 0 {
		t.Fatalf("intact log: %v", p)
	}
	changed := append([]Event(nil), log...)
	changed[2].Actor = "user:mallory"
	if p := run(changed); len(p) != 1 || p[0].EventID != 3 {
		t.Errorf("changed event 3: problems %v, want one naming event 3", p)
	}
	gap := append(append([]Event(nil), log[:1]...), log[2:]...)
	if p := run(gap); len(p) != 1 || p[0].EventID != 3 {
		t.Errorf("deleted event 2: problems %v, want one gap at event 3", p)
	}
	if p := run(log); len(p) != 0 {
		t.Fatalf("the checks changed the log: %v", p)
	}
	wrongKey := NewVerifier([]byte("another key, 32 bytes long......"), 0, nil)
	wrongKey.Add(log[0])
	if _, p := wrongKey.Result(); len(p) != 1 {
		t.Errorf("another key verified the log")
	}
}
