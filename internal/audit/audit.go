// Package audit defines the audit log's events: who changed which record and how, each
// event chained to the one before by an HMAC, so an edited or removed row is found by
// Verify. The store writes events in the transaction of the change they describe.
package audit

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"wharf/internal/durable"
)

// EncodingVersion names the byte encoding the chain's HMACs are computed over (see
// Encode). A new encoding gets a new version; events keep the one they were written with.
const EncodingVersion = "wharf-audit/1"

// SystemActor is the actor of changes no person or token made.
const SystemActor = "system"

// Event is one audit log entry.
type Event struct {
	ID         int64     `json:"id"`
	Time       time.Time `json:"time"`
	Actor      string    `json:"actor"`
	Action     string    `json:"action"`      // e.g. "create", "update", "delete", "redeliver"
	Kind       string    `json:"kind"`        // the record's kind, e.g. "partner", "route"
	RecordID   string    `json:"record_id"`   // the record's id or key, as text
	RecordName string    `json:"record_name"` // a name people recognise; may equal RecordID
	Changes    []Change  `json:"changes"`
	PrevHash   []byte    `json:"prev_hash"`
	Hash       []byte    `json:"hash"`
}

// Change is one field that changed. Secret fields carry no values, only Secret.
type Change struct {
	Path   string          `json:"path"` // dotted path of the field, e.g. "tls.min_version"
	Old    json.RawMessage `json:"old,omitempty"`
	New    json.RawMessage `json:"new,omitempty"`
	Secret bool            `json:"secret,omitempty"`
}

type actorKey struct{}

// WithActor returns a context whose changes are recorded as made by actor, e.g.
// "user:alice", "token:deploy" or "cli".
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom returns the actor WithActor put in ctx, or SystemActor.
func ActorFrom(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	return SystemActor
}

// Encode returns the bytes an event's hash covers: EncodingVersion, then the id, time
// (RFC 3339 with nanoseconds, UTC), actor, action, kind, record id, record name and the
// changes as JSON, each field as its length (unsigned 32-bit, big-endian) followed by its
// bytes. The changes' JSON is the compact encoding of the Changes array with keys in the
// order path, old, new, secret; old and new are stored compact JSON, so the bytes are
// the same when read back from the database.
func Encode(e Event) []byte {
	var b bytes.Buffer
	field := func(s string) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		b.Write(n[:])
		b.WriteString(s)
	}
	field(EncodingVersion)
	field(strconv.FormatInt(e.ID, 10))
	field(e.Time.UTC().Format(time.RFC3339Nano))
	field(e.Actor)
	field(e.Action)
	field(e.Kind)
	field(e.RecordID)
	field(e.RecordName)
	field(string(ChangesJSON(e.Changes)))
	return b.Bytes()
}

// ChangesJSON is the stored and hashed form of changes; nil encodes as [].
func ChangesJSON(cs []Change) []byte {
	if cs == nil {
		cs = []Change{}
	}
	b, err := json.Marshal(cs)
	if err != nil {
		// Changes hold only strings, bools and valid raw JSON.
		panic(fmt.Sprintf("audit: encode changes: %v", err))
	}
	return b
}

// Chain returns the hash of e after prev: HMAC-SHA256 under key of prev followed by
// Encode(e). The first event's prev is empty.
func Chain(key, prev []byte, e Event) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(prev)
	m.Write(Encode(e))
	return m.Sum(nil)
}

// Problem is one reason the log does not verify.
type Problem struct {
	EventID int64  `json:"event_id"`
	Text    string `json:"text"`
}

func (p Problem) String() string { return fmt.Sprintf("event %d: %s", p.EventID, p.Text) }

// Verifier checks events in id order, one at a time, so a log of any length verifies in
// constant memory.
type Verifier struct {
	key      []byte
	prevID   int64
	prevHash []byte
	count    int
	problems []Problem
}

// NewVerifier starts a check after the event (afterID, afterHash); 0 and nil start at
// the beginning of the log.
func NewVerifier(key []byte, afterID int64, afterHash []byte) *Verifier {
	return &Verifier{key: key, prevID: afterID, prevHash: afterHash}
}

// Add checks the next event: its id follows the previous one, its prev_hash is the
// previous hash and its hash is the chain's.
func (v *Verifier) Add(e Event) {
	v.count++
	if e.ID != v.prevID+1 {
		if e.ID > v.prevID+1 {
			v.problems = append(v.problems, Problem{e.ID, fmt.Sprintf("gap: events %d to %d are missing", v.prevID+1, e.ID-1)})
		} else {
			v.problems = append(v.problems, Problem{e.ID, fmt.Sprintf("out of order after event %d", v.prevID)})
		}
	}
	switch {
	case !hmac.Equal(e.PrevHash, v.prevHash) && e.ID == v.prevID+1:
		v.problems = append(v.problems, Problem{e.ID, "prev_hash is not the previous event's hash"})
	case !hmac.Equal(Chain(v.key, e.PrevHash, e), e.Hash):
		v.problems = append(v.problems, Problem{e.ID, "hash does not match the event's content: it was changed"})
	}
	v.prevID, v.prevHash = e.ID, e.Hash
}

// Result returns how many events were checked and what is wrong; no problem means the
// log verifies.
func (v *Verifier) Result() (checked int, problems []Problem) { return v.count, v.problems }

// Diff lists the fields that differ between before and after, two values that encode as
// JSON objects (a nil side is a record created or deleted). Nested objects become dotted
// paths; arrays compare whole; created_at and updated_at are left out. Fields named in secret are recorded as changed with no
// value.
func Diff(before, after any, secret ...string) ([]Change, error) {
	b, err := flatten(before)
	if err != nil {
		return nil, err
	}
	a, err := flatten(after)
	if err != nil {
		return nil, err
	}
	paths := make(map[string]bool, len(a)+len(b))
	for p := range a {
		paths[p] = true
	}
	for p := range b {
		paths[p] = true
	}
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	var out []Change
	for _, p := range keys {
		if bookkeeping[p] {
			continue
		}
		o, n := b[p], a[p]
		if bytes.Equal(o, n) {
			continue
		}
		if isSecret(p, secret) {
			out = append(out, Change{Path: p, Secret: true})
			continue
		}
		out = append(out, Change{Path: p, Old: o, New: n})
	}
	return out, nil
}

// bookkeeping are fields every record has that the event's own time already tells.
var bookkeeping = map[string]bool{"created_at": true, "updated_at": true}

// SecretChange records that a secret field changed.
func SecretChange(path string) Change { return Change{Path: path, Secret: true} }

func isSecret(path string, secret []string) bool {
	for _, s := range secret {
		if path == s || strings.HasPrefix(path, s+".") {
			return true
		}
	}
	return false
}

// flatten encodes v as JSON and returns its leaves by dotted path, each as compact JSON.
func flatten(v any) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if v == nil {
		return out, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("audit: encode record: %w", err)
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("audit: decode record: %w", err)
	}
	if _, ok := tree.(map[string]any); !ok {
		return nil, fmt.Errorf("audit: record encodes as %T, want an object", tree)
	}
	var walk func(prefix string, v any) error
	walk = func(prefix string, v any) error {
		// An empty object has no leaves: a field appearing in it later is one change.
		if m, ok := v.(map[string]any); ok {
			for k, c := range m {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				if err := walk(p, c); err != nil {
					return err
				}
			}
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out[prefix] = b
		return nil
	}
	return out, walk("", tree)
}

// KeySize is the length of the chain's HMAC key.
const KeySize = 32

// LoadKeyFile reads an existing audit key file; verifying needs the key the events
// were written with, never a new one.
func LoadKeyFile(path string, logger *slog.Logger) ([]byte, error) {
	return durable.LoadKeyFile(path, KeySize, "audit key", logger)
}

// LoadOrCreateKey reads the audit key file at path (WHARF_AUDIT_KEY_FILE, or audit.key in
// the data directory) or, when there is none, generates one; see
// durable.LoadOrCreateKeyFile.
func LoadOrCreateKey(path string, logger *slog.Logger) ([]byte, error) {
	if logger == nil {
		logger = slog.Default()
	}
	key, created, err := durable.LoadOrCreateKeyFile(path, KeySize, "audit key", logger)
	if err != nil {
		return nil, err
	}
	if created {
		logger.Warn("generated a new audit key file; back it up apart from the database: without it the audit log cannot be verified",
			"path", path)
	}
	return key, nil
}
