package as2_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"wharf/internal/persistence"
)

// resendView is what the redeliver test reads of a message.
type resendView struct {
	Deliveries []struct {
		ID        int64  `json:"id"`
		State     string `json:"state"`
		Attempts  int    `json:"attempts"`
		LastError string `json:"last_error"`
	} `json:"deliveries"`
	History []struct {
		Kind   string `json:"kind"`
		Reason string `json:"reason"`
	} `json:"history"`
	Protocols map[string]json.RawMessage `json:"protocols"`
}

// waitAttempt polls a's message until its one delivery is delivered after the attempts
// given.
func waitAttempt(t *testing.T, a *peer, id int64, attempts int) resendView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var m resendView
		a.do("GET", fmt.Sprintf("/api/v1/messages/%d", id), "", nil, &m)
		if len(m.Deliveries) == 1 && m.Deliveries[0].Attempts == attempts {
			switch m.Deliveries[0].State {
			case "delivered":
				return m
			case "failed":
				t.Fatalf("attempt %d failed: %s", attempts, m.Deliveries[0].LastError)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %d: attempt %d not delivered within 30s: %+v", id, attempts, m.Deliveries)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for work
	}
}

// as2IDs lists the AS2 Message-IDs a's message went out under.
func as2IDs(t *testing.T, m resendView) []string {
	t.Helper()
	var panel struct {
		Outbound []struct {
			AS2MessageID string `json:"as2_message_id"`
		} `json:"outbound"`
	}
	if err := json.Unmarshal(m.Protocols["as2"], &panel); err != nil {
		t.Fatalf("AS2 panel %s: %v", m.Protocols["as2"], err)
	}
	ids := make([]string, len(panel.Outbound))
	for i, o := range panel.Outbound {
		ids[i] = o.AS2MessageID
	}
	return ids
}

// countInbound counts b's messages from a that carry the document.
func countInbound(b *peer, sum [32]byte) int {
	var list struct {
		Messages []messageView `json:"messages"`
	}
	b.do("GET", "/api/v1/messages?from=a&limit=1000", "", nil, &list)
	n := 0
	for _, m := range list.Messages {
		if m.SHA256 == hex.EncodeToString(sum[:]) {
			n++
		}
	}
	return n
}

// TestRedeliverSameOrNewMessageID redelivers an AS2 delivery that got its MDN: under the
// same Message-ID, the partner's gateway answers its stored MDN and stores nothing; as a
// new message, it takes the document a second time. A's history records each choice.
func TestRedeliverSameOrNewMessageID(t *testing.T) {
	for dbName, url := range databases(t) {
		t.Run(dbName, func(t *testing.T) {
			a := startPeer(t, "WHARF-A", url)
			b := startPeer(t, "WHARF-B", "")
			connect(t, a, b)
			doc := make([]byte, 4<<10)
			_, _ = rand.Read(doc)
			sum := sha256.Sum256(doc)
			var sent messageView
			sentAt := time.Now()
			a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "b", "target": "as2_sender_default"}, "order.bin", doc, &sent)
			first := waitAttempt(t, a, sent.ID, 1)
			ids := as2IDs(t, first)
			if len(ids) != 1 || countInbound(b, sum) != 1 {
				t.Fatalf("first send: A's Message-IDs %v, B's copies %d", ids, countInbound(b, sum))
			}
			redeliver := fmt.Sprintf("/api/v1/messages/%d/deliveries/%d/redeliver", sent.ID, first.Deliveries[0].ID)

			// The same Message-ID (the default): B answers its stored MDN, stores nothing.
			a.json("POST", redeliver, map[string]any{}, nil)
			same := waitAttempt(t, a, sent.ID, 2)
			if got := as2IDs(t, same); len(got) != 1 || got[0] != ids[0] {
				t.Fatalf("resend under the same Message-ID went out as %v, want %v", got, ids)
			}
			if n := countInbound(b, sum); n != 1 {
				t.Fatalf("B holds %d copies after a resend under the same Message-ID, want 1", n)
			}

			// A new message: B takes the document again. Its signature must not be the
			// first one's: B takes the same content signed within the same second (the
			// signing time's precision) under another Message-ID as a replayed copy.
			for time.Since(sentAt) < 1100*time.Millisecond {
				time.Sleep(10 * time.Millisecond) // the clock's second, not a wait for work
			}
			a.json("POST", redeliver, map[string]any{"resend": "new_message"}, nil)
			fresh := waitAttempt(t, a, sent.ID, 3)
			got := as2IDs(t, fresh)
			if len(got) != 2 || got[0] == got[1] {
				t.Fatalf("resend as a new message went out as %v, want a second Message-ID", got)
			}
			if n := countInbound(b, sum); n != 2 {
				t.Fatalf("B holds %d copies after a resend as a new message, want 2", n)
			}
			// B's file writer found the same bytes in place for the second copy.
			if data, err := os.ReadFile(filepath.Join(b.data, "inbox", "a", "order.bin")); err != nil || !bytes.Equal(data, doc) {
				t.Fatalf("B's inbox: %v", err)
			}

			var reasons []string
			for _, h := range fresh.History {
				if h.Kind == string(persistence.HistoryRedeliverRequested) {
					reasons = append(reasons, h.Reason)
				}
			}
			if want := []string{persistence.ResendSame.Reason(), persistence.ResendNew.Reason()}; fmt.Sprint(reasons) != fmt.Sprint(want) {
				t.Errorf("A's redeliver history = %q, want %q", reasons, want)
			}
		})
	}
}
