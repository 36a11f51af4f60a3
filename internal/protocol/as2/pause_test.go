package as2_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/certs/certstest"
	"wharf/internal/protocol/as2/as2test"

	// The notifier records the alerts the test looks for.
	_ "wharf/internal/notification"
)

// TestAuthenticationFailedPausesPartner: B holds the wrong certificate for A, so it
// answers A's message with an MDN saying authentication-failed. A pauses partner b in
// the failure's transaction and raises partner_paused; the next 10 messages wait paused,
// never sent (B receives nothing more); once B holds the right certificate, resuming b
// delivers all 10.
func TestAuthenticationFailedPausesPartner(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, url string) {
		a := startPeer(t, "WHARF-A", url)
		b := startPeer(t, "WHARF-B", "")
		connect(t, a, b)

		// B verifies A's signatures with a stranger's certificate.
		var rb map[string]any
		b.do("GET", "/api/v1/as2/remote-profiles/a", "", nil, &rb)
		good, goodOne := rb["partner_certificate_ids"], rb["partner_certificate_id"]
		wrong := b.upload(certstest.CertsPEM(as2test.NewIdentity(t, "stranger").Cert))
		rb["partner_certificate_ids"], rb["partner_certificate_id"] = []int64{wrong}, wrong
		b.json("PUT", "/api/v1/as2/remote-profiles/a", rb, nil)

		refused := sendDoc(t, a, "refused.bin")
		got := waitDeliveries(t, a, refused, "failed")
		if !strings.Contains(got.Deliveries[0].LastError, "authentication-failed") {
			t.Fatalf("refused delivery's error = %q", got.Deliveries[0].LastError)
		}
		var pause struct {
			Paused    bool   `json:"paused"`
			Reason    string `json:"reason"`
			Actor     string `json:"actor"`
			MessageID int64  `json:"message_id"`
			Waiting   int    `json:"waiting"`
		}
		a.do("GET", "/api/v1/partners/b/pause", "", nil, &pause)
		if !pause.Paused || pause.Actor != "system" || pause.MessageID != refused || !strings.Contains(pause.Reason, "authentication-failed") {
			t.Fatalf("pause = %+v", pause)
		}
		waitAlert(t, a, "partner_paused", "partner:b")

		var held []int64
		for i := range 10 {
			held = append(held, sendDoc(t, a, fmt.Sprintf("held-%d.bin", i)))
		}
		for _, id := range held {
			if m := waitDeliveries(t, a, id, "paused"); m.Status != "held" {
				t.Fatalf("message %d is %s, want held", id, m.Status)
			}
		}
		a.do("GET", "/api/v1/partners/b/pause", "", nil, &pause)
		if pause.Waiting != 10 {
			t.Fatalf("%d deliveries wait, want 10", pause.Waiting)
		}
		var fromA struct {
			Total int `json:"total"`
		}
		b.do("GET", "/api/v1/messages?from=a", "", nil, &fromA)
		if fromA.Total != 1 {
			t.Fatalf("B holds %d messages from A, want only the refused one", fromA.Total)
		}

		// B gets the right certificate; the operator resumes b.
		rb["partner_certificate_ids"], rb["partner_certificate_id"] = good, goodOne
		b.json("PUT", "/api/v1/as2/remote-profiles/a", rb, nil)
		var resumed struct {
			Resumed int `json:"resumed"`
		}
		a.json("POST", "/api/v1/partners/b/resume", map[string]any{}, &resumed)
		if resumed.Resumed != 10 {
			t.Fatalf("resumed %d, want 10", resumed.Resumed)
		}
		for _, id := range held {
			waitDeliveries(t, a, id, "delivered")
		}
		for i := range 10 {
			if _, err := os.Stat(filepath.Join(b.data, "inbox", "a", fmt.Sprintf("held-%d.bin", i))); err != nil {
				t.Errorf("B's inbox: %v", err)
			}
		}
		a.do("GET", "/api/v1/partners/b/pause", "", nil, &pause)
		if pause.Paused {
			t.Fatalf("still paused: %+v", pause)
		}
	})
}

// sendDoc sends a small document from A's organization to partner b through the AS2
// sender and returns the message's id.
func sendDoc(t *testing.T, a *peer, name string) int64 {
	t.Helper()
	var sent messageView
	a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "b", "target": "as2_sender_default"}, name, []byte("document "+name), &sent)
	return sent.ID
}

// waitDeliveries polls a message until its one delivery is in state.
func waitDeliveries(t *testing.T, p *peer, id int64, state string) messageView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var m messageView
		p.do("GET", fmt.Sprintf("/api/v1/messages/%d", id), "", nil, &m)
		if len(m.Deliveries) == 1 && m.Deliveries[0].State == state {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %d: deliveries %+v, want one %s", id, m.Deliveries, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAlert polls the alerts a peer heard until one of code about subject is there.
func waitAlert(t *testing.T, p *peer, code, subject string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list struct {
			Alerts []struct {
				Code    string `json:"code"`
				Subject struct {
					Kind string `json:"kind"`
					ID   string `json:"id"`
				} `json:"subject"`
				Link string `json:"link"`
			} `json:"alerts"`
		}
		p.do("GET", "/api/v1/alerts", "", nil, &list)
		for _, a := range list.Alerts {
			if a.Code == code && a.Subject.Kind+":"+a.Subject.ID == subject && a.Link == "/ui/partners/b" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s alert about %s in %+v", code, subject, list.Alerts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
