package gateway_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPartnerFileNamesLandVisibleAndApart: names that would land as dot files are
// written visible, and a second document under a taken name gets a suffixed name of its
// own, recorded in its history, instead of failing after it was accepted.
func TestPartnerFileNamesLandVisibleAndApart(t *testing.T) {
	for name, url := range databases(t) {
		t.Run(name, func(t *testing.T) {
			h := start(t, url)
			h.mustJSON("POST", "/api/v1/partners", map[string]string{"name": "acme"}, nil)
			sent := []struct{ name, body, want, note string }{
				{".hidden", "one", "_hidden", ""},
				{".wharf-tmp-x", "two", "_wharf-tmp-x", ""},
				{"  .edi ", "three", "_edi", ""},
				{"order.edi", "first order", "order.edi", "written as acme/order.edi"},
				{"order.edi", "second order", "order-1.edi", "written as acme/order-1.edi"},
			}
			for _, s := range sent {
				m := h.send("acme", "local", "file_writer_default", s.name, []byte(s.body))
				m = h.waitStatus(m.ID, "delivered")
				if s.note != "" && !slices.ContainsFunc(m.History, func(e struct {
					Kind    string `json:"kind"`
					ToState string `json:"to_state"`
					Reason  string `json:"reason"`
				}) bool {
					return e.ToState == "delivered" && e.Reason == s.note
				}) {
					t.Errorf("%q: history %+v lacks %q", s.name, m.History, s.note)
				}
				got, err := os.ReadFile(filepath.Join(h.data, "inbox", "acme", s.want))
				if err != nil || string(got) != s.body {
					t.Errorf("%q: %s holds %q (%v), want %q", s.name, s.want, got, err, s.body)
				}
			}
			entries, err := os.ReadDir(filepath.Join(h.data, "inbox", "acme"))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".") {
					t.Errorf("%s landed as a dot file", e.Name())
				}
			}
			if len(entries) != len(sent) {
				t.Errorf("%d files in the inbox, want %d", len(entries), len(sent))
			}
		})
	}
}
