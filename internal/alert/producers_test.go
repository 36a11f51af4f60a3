package alert

import (
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
)

func TestForMessage(t *testing.T) {
	m := persistence.Message{ID: 9, From: "acme", To: "local", OriginalFileName: "po.edi"}
	for _, tc := range []struct {
		status persistence.MessageStatus
		code   Code
		ok     bool
	}{
		{persistence.StatusError, MessageFailed, true},
		{persistence.StatusStalled, DeliveryStalled, true},
		{persistence.StatusNotRouted, MessageNotRouted, true},
		{persistence.StatusRefused, MessageRefused, true},
		{persistence.StatusDelivered, "", false},
		{persistence.StatusRetrying, "", false},
	} {
		m.Status = tc.status
		a, ok := ForMessage(m, "poster", `Post "https://user:pw@partner.example/in?token=x": connection refused`)
		if ok != tc.ok || a.Code != tc.code {
			t.Errorf("%s: code %q ok %v, want %q %v", tc.status, a.Code, ok, tc.code, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if err := a.Normalize(time.Now()); err != nil {
			t.Fatal(err)
		}
		key := string(tc.code) + ":message:9"
		if tc.code == MessageRefused {
			key = "message_refused:party:acme"
		}
		if a.Link != "/ui/messages/9" || a.Subject.ID != "9" || a.DedupeKey != key {
			t.Errorf("%s: %+v", tc.status, a)
		}
		for _, d := range a.Details {
			if strings.Contains(d.Value, "partner.example") || strings.Contains(d.Value, "pw@") {
				t.Errorf("%s: detail %q carries the URL", tc.status, d.Value)
			}
		}
	}
}
