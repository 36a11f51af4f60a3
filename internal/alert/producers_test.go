package alert

import (
	"errors"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
)

func TestForMessage(t *testing.T) {
	m := persistence.Message{ID: 9, From: "acme", To: "local", OriginalFileName: "po.edi", CorrelationID: "PO-4711"}
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
		correlated := false
		for _, d := range a.Details {
			if strings.Contains(d.Value, "partner.example") || strings.Contains(d.Value, "pw@") {
				t.Errorf("%s: detail %q carries the URL", tc.status, d.Value)
			}
			correlated = correlated || (d.Label == "Correlation id" && d.Value == "PO-4711")
		}
		if !correlated {
			t.Errorf("%s: the alert does not carry the correlation id: %+v", tc.status, a.Details)
		}
	}
}

func TestMessageResolution(t *testing.T) {
	for _, tc := range []struct {
		previous, now persistence.MessageStatus
		code          Code
	}{
		{persistence.StatusError, persistence.StatusDelivered, MessageFailed},
		{persistence.StatusError, persistence.StatusInProgress, MessageFailed},
		{persistence.StatusStalled, persistence.StatusError, DeliveryStalled},
		{persistence.StatusNotRouted, persistence.StatusInProgress, MessageNotRouted},
		{persistence.StatusError, persistence.StatusError, ""},
		{persistence.StatusRetrying, persistence.StatusDelivered, ""},
	} {
		r, ok := MessageResolution(persistence.Message{ID: 9, Status: tc.now}, tc.previous)
		if ok != (tc.code != "") || r.Code != tc.code {
			t.Errorf("%s to %s: %q %v, want %q", tc.previous, tc.now, r.Code, ok, tc.code)
			continue
		}
		if !ok {
			continue
		}
		raised, _ := ForMessage(persistence.Message{ID: 9, Status: tc.previous}, "", "")
		if err := errors.Join(r.Normalize(time.Now()), raised.Normalize(time.Now())); err != nil {
			t.Fatal(err)
		}
		if !r.Resolves || r.DedupeKey != raised.DedupeKey {
			t.Errorf("%s to %s: resolution %+v does not match the alert's key %q", tc.previous, tc.now, r, raised.DedupeKey)
		}
	}
}

func TestForSession(t *testing.T) {
	a := ForSession(BlockedSession{Key: "poster|acme→local", Target: "poster", From: "acme", To: "local",
		DeliveryID: 7, MessageID: 5, Reason: "HTTP 400 from https://x.example/?token=s3cret"})
	if err := a.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if a.Code != SessionBlocked || a.Severity != SeverityCritical || a.DedupeKey != "session_blocked:session:poster|acme→local" {
		t.Fatalf("alert = %+v", a)
	}
	for _, d := range a.Details {
		if strings.Contains(d.Value, "s3cret") || strings.Contains(d.Value, "x.example") {
			t.Fatalf("detail %q leaks the URL", d.Value)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := SessionResolution("poster|acme→local", at)
	if err := r.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if !r.Resolves || r.DedupeKey != a.DedupeKey || !r.Time.Equal(at) {
		t.Fatalf("resolution = %+v", r)
	}
}

func TestForPartnerPause(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := ForPartnerPause(persistence.PartnerPause{Partner: "acme", Reason: "negative MDN: authentication-failed from https://x.example/?token=s3cret",
		Actor: "system", PausedAt: at, MessageID: 5, DeliveryID: 7, Waiting: 10})
	if err := a.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if a.Code != PartnerPaused || a.Severity != SeverityCritical || a.DedupeKey != "partner_paused:partner:acme" ||
		a.Link != "/ui/partners/acme" || !a.Time.Equal(at) || !strings.Contains(a.Summary, "10 deliveries wait") {
		t.Fatalf("alert = %+v", a)
	}
	for _, d := range a.Details {
		if strings.Contains(d.Value, "s3cret") || strings.Contains(d.Value, "x.example") {
			t.Fatalf("detail %q leaks the URL", d.Value)
		}
	}
	r := PauseResolution("acme", at.Add(time.Hour))
	if err := r.Normalize(time.Now()); err != nil {
		t.Fatal(err)
	}
	if !r.Resolves || r.DedupeKey != a.DedupeKey {
		t.Fatalf("resolution = %+v", r)
	}
}
