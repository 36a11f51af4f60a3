package api

import (
	"context"
	"testing"

	"wharf/internal/persistence"
)

func TestUnknownSendersREST(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		hit := persistence.UnknownSenderHit{Source: "as2_in", RemoteAddr: "192.0.2.7", SenderID: "STRANGER", ReceiverID: "WHARF",
			Reason: "no trading partner agreement", Count: 1}
		for range 2 {
			if err := b.store.RecordUnknownSenders(ctx, []persistence.UnknownSenderHit{hit}); err != nil {
				t.Fatal(err)
			}
		}
		var list struct {
			UnknownSenders []persistence.UnknownSender `json:"unknown_senders"`
			Total          int                         `json:"total"`
			Limit          int                         `json:"limit"`
		}
		b.must(200, "GET", "/api/v1/unknown-senders?limit=10", "").json(t, &list)
		if list.Total != 1 || list.Limit != 10 || len(list.UnknownSenders) != 1 {
			t.Fatalf("list = %+v", list)
		}
		if u := list.UnknownSenders[0]; u.Count != 2 || u.SenderID != "STRANGER" || u.ReceiverID != "WHARF" ||
			u.RemoteAddr != "192.0.2.7" || u.Source != "as2_in" || u.LastReason != hit.Reason {
			t.Errorf("unknown sender = %+v", u)
		}
		b.must(400, "GET", "/api/v1/unknown-senders?limit=0", "")
		b.must(401, "GET", "/api/v1/unknown-senders", "", withoutHeader("Authorization"))
	})
}
