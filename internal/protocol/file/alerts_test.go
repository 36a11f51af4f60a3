package file

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"wharf/internal/alert"
)

type raisedAlerts struct {
	mu sync.Mutex
	as []alert.Alert
}

func (r *raisedAlerts) Raise(a alert.Alert) {
	r.mu.Lock()
	r.as = append(r.as, a)
	r.mu.Unlock()
}

// Each file put aside raises one file_unroutable alert naming the file, never its content.
func TestPollerUnroutableRaisesAlert(t *testing.T) {
	b := setupPoller(t, nil)
	r := &raisedAlerts{}
	b.p.alerts = r
	b.ing.unknown["nobody"] = true
	for i := range 2 {
		b.write(t, "nobody/a.txt", fmt.Sprint("CANARY payload ", i))
		scan(t, b.p)
		scan(t, b.p)
	}
	if len(r.as) != 2 {
		t.Fatalf("raised %d alerts, want 2", len(r.as))
	}
	for _, a := range r.as {
		if a.Code != alert.FileUnroutable || a.Subject.ID != "nobody/a.txt" || !strings.Contains(a.Summary, "nobody/a.txt") {
			t.Errorf("alert %+v", a)
		}
		if strings.Contains(fmt.Sprint(a), "CANARY") {
			t.Errorf("alert carries the payload: %+v", a)
		}
	}
}
