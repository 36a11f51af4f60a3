package ui

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzLogsFilter: any query string gives a filter or named errors, never a panic, and a
// process id that passes holds only what a bus subject token may.
func FuzzLogsFilter(f *testing.F) {
	for _, seed := range []string{"", "level=warn&q=order", "process=ab12", "process=a.b", "process=*", "process=>",
		"level=loud", "q=" + strings.Repeat("x", maxLogQuery+1), "process=" + strings.Repeat("f", maxProcessID+1)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lf := parseLogsFilter(q)
		if _, bad := lf.Errors["process"]; bad || lf.Process == "" {
			return
		}
		if strings.ContainsAny(lf.Process, ".*> \t\r\n") || len(lf.Process) > maxProcessID {
			t.Fatalf("process %q accepted", lf.Process)
		}
	})
}
