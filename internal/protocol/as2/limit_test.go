package as2_test

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTooLargeNamesTheLimit sends B a document over the limit B's profile of A sets: B
// refuses it with 413 before reading it, and A's delivery fails with B's reason, which
// names the limit and the setting, rather than a bare status.
func TestTooLargeNamesTheLimit(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, url string) {
		a := startPeer(t, "WHARF-A", url)
		b := startPeer(t, "WHARF-B", "")
		connect(t, a, b)
		var rb map[string]any
		b.do("GET", "/api/v1/as2/remote-profiles/a", "", nil, &rb)
		rb["max_message_size_mib"] = 1
		b.json("PUT", "/api/v1/as2/remote-profiles/a", rb, nil)

		doc := make([]byte, 2<<20)
		_, _ = rand.Read(doc)
		var sent messageView
		a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "b", "target": "as2_sender_default"}, "big.bin", doc, &sent)
		deadline := time.Now().Add(30 * time.Second)
		var got messageView
		for {
			a.do("GET", fmt.Sprintf("/api/v1/messages/%d", sent.ID), "", nil, &got)
			if len(got.Deliveries) == 1 && got.Deliveries[0].State == "failed" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %d did not fail: %+v", sent.ID, got.Deliveries)
			}
			time.Sleep(20 * time.Millisecond)
		}
		want := "HTTP 413 Request Entity Too Large: the message of "
		want2 := "is larger than the limit of 1 MiB accepted from this partner (max_message_size_mib of the partner's AS2 profile)"
		if reason := got.Deliveries[0].LastError; !strings.HasPrefix(reason, want) || !strings.Contains(reason, want2) {
			t.Errorf("A's reason %q, want %q … %q", reason, want, want2)
		}
	})
}
