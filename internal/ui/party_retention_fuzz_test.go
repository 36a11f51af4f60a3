package ui

import (
	"testing"

	"wharf/internal/persistence"
)

// FuzzParseRetentionForm reads a party's retention form: either every refused field is
// named, or the days read are within range and empty fields keep the global setting.
func FuzzParseRetentionForm(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"30", ""}, {" 0 ", "36500"}, {"-1", "x"}, {"36501", "1e3"}, {"٣", "+7"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, payload, history string) {
		pr, err := parseRetentionForm(payload, history)
		if err != nil {
			fes, ok := persistence.AllFieldErrors(err)
			if !ok || len(fes) == 0 {
				t.Fatalf("(%q, %q): %v is not field errors", payload, history, err)
			}
			for _, fe := range fes {
				if fe.Field != "payload_retention_days" && fe.Field != "history_retention_days" {
					t.Fatalf("(%q, %q): error names %q", payload, history, fe.Field)
				}
			}
			return
		}
		if pr.Check() != nil {
			t.Fatalf("(%q, %q): accepted %+v out of range", payload, history, pr)
		}
	})
}
