package gateway

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"wharf/internal/logging"
)

// FuzzLogsTailRequest: whatever a request on the bus holds, the answer is a reply that
// decodes, within the record and byte bounds.
func FuzzLogsTailRequest(f *testing.F) {
	for _, seed := range []string{`{"level":"INFO","text":"x","limit":10}`, `{"limit":-5}`, `{"limit":100000}`,
		`{"level":"LOUD"}`, `{"level":12}`, `not json`, ``, `{"text":null,"limit":1e9}`} {
		f.Add([]byte(seed))
	}
	ring := logging.NewRing(500, slog.LevelDebug)
	log := slog.New(ring.Handler())
	for i := range 500 {
		log.Info("line", "n", i, "pad", strings.Repeat("p", 1000))
	}
	ls := &logsServer{ring: ring}
	f.Fuzz(func(t *testing.T, data []byte) {
		out := ls.answer("", data)
		var rep logsTailReply
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("reply %q does not decode: %v", out, err)
		}
		if len(rep.Entries) > maxTailRecords || len(out) > maxTailBytes+64<<10 {
			t.Fatalf("reply of %d records, %d bytes exceeds the bounds", len(rep.Entries), len(out))
		}
	})
}
