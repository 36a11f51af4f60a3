package file

import (
	"fmt"
	"strings"
	"testing"

	"wharf/internal/alert"
	"wharf/internal/alert/alerttest"
)

// Each file put aside raises one file_unroutable alert naming the file, never its content.
func TestPollerUnroutableRaisesAlert(t *testing.T) {
	b := setupPoller(t, nil)
	r := &alerttest.Recorder{}
	b.p.alerts = r
	b.ing.unknown["nobody"] = true
	for i := range 2 {
		b.write(t, "nobody/a.txt", fmt.Sprint("CANARY payload ", i))
		scan(t, b.p)
		scan(t, b.p)
	}
	as := r.Alerts()
	if len(as) != 2 {
		t.Fatalf("raised %d alerts, want 2", len(as))
	}
	for _, a := range as {
		if a.Code != alert.FileUnroutable || a.Subject.ID != "nobody/a.txt" || !strings.Contains(a.Summary, "nobody/a.txt") {
			t.Errorf("alert %+v", a)
		}
		if strings.Contains(fmt.Sprint(a), "CANARY") {
			t.Errorf("alert carries the payload: %+v", a)
		}
	}
}
