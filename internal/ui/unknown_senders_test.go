package ui

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"wharf/internal/persistence"
)

// The partners page links to the unknown senders page, which lists each counted pair
// with its count, address, times and last reason, and escapes what a request sent.
func TestUnknownSendersPage(t *testing.T) {
	pb := setupPages(t)
	ctx := context.Background()
	if body := pb.get(t, "/ui/partners", http.StatusOK); !strings.Contains(body, `href="/ui/unknown-senders"`) {
		t.Errorf("the partners page does not link to the unknown senders")
	}
	if body := pb.get(t, "/ui/unknown-senders", http.StatusOK); !strings.Contains(body, "No unknown senders.") {
		t.Errorf("empty page:\n%s", body)
	}
	for _, hit := range []persistence.UnknownSenderHit{
		{Source: "as2_in", RemoteAddr: "192.0.2.7", SenderID: "STRANGER", ReceiverID: "WHARF", Reason: "no trading partner agreement", Count: 1},
		{Source: "as2_in", RemoteAddr: "192.0.2.7", SenderID: "STRANGER", ReceiverID: "WHARF", Reason: "no trading partner agreement", Count: 1},
		{Source: "as2_in", RemoteAddr: "192.0.2.9", SenderID: "<b>x</b>", Reason: "the AS2-To header is missing", Count: 1},
	} {
		if err := pb.store.RecordUnknownSenders(ctx, []persistence.UnknownSenderHit{hit}); err != nil {
			t.Fatal(err)
		}
	}
	body := pb.get(t, "/ui/unknown-senders", http.StatusOK)
	for _, want := range []string{"STRANGER", "192.0.2.7", "<td>2</td>", "no trading partner agreement", "&lt;b&gt;x&lt;/b&gt;",
		"the AS2-To header is missing", `<span class="muted">missing</span>`, `href="/ui/messages?status=refused"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q\n%s", want, body)
		}
	}
	if strings.Contains(body, "<b>x</b>") {
		t.Error("a sender id is not escaped")
	}
}
