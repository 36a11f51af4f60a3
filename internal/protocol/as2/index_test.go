package as2_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/module"
	"wharf/internal/protocol/as2"
)

// The message list finds a message by its AS2 Message-ID on both sides of an exchange and
// shows the receipt.
func TestMessageIndex(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, url string) {
		a := startPeer(t, "WHARF-A", url)
		b := startPeer(t, "WHARF-B", url)
		connect(t, a, b)
		var sent messageView
		a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "b", "target": "as2_sender_default"}, "po.edi", []byte("UNA"), &sent)
		deadline := time.Now().Add(30 * time.Second)
		var got messageView
		for {
			a.do("GET", fmt.Sprintf("/api/v1/messages/%d", sent.ID), "", nil, &got)
			if len(got.Deliveries) == 1 && got.Deliveries[0].State == "delivered" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %d not delivered: %+v", sent.ID, got.Deliveries)
			}
			time.Sleep(20 * time.Millisecond)
		}
		var list struct {
			Messages []messageView `json:"messages"`
		}
		b.do("GET", "/api/v1/messages?from=a", "", nil, &list)
		if len(list.Messages) != 1 {
			t.Fatalf("B holds %d messages from A", len(list.Messages))
		}
		received := list.Messages[0].ID

		ctx := context.Background()
		ixA := a.g.Runtimes[as2.ModuleName].(module.MessageIndex)
		ixB := b.g.Runtimes[as2.ModuleName].(module.MessageIndex)
		refs, err := ixA.MessageRefs(ctx, []int64{sent.ID, sent.ID + 1000})
		if err != nil {
			t.Fatal(err)
		}
		ref := refs[sent.ID]
		if !strings.HasPrefix(ref.Ref, "<wharf-") || ref.Receipt != "signed, accepted" || len(refs) != 1 {
			t.Fatalf("A's refs = %+v", refs)
		}
		refsB, err := ixB.MessageRefs(ctx, []int64{received})
		if err != nil {
			t.Fatal(err)
		}
		if refsB[received].Ref != ref.Ref || refsB[received].Receipt != "we signed (sync)" {
			t.Errorf("B's refs = %+v, want %s signed by us", refsB, ref.Ref)
		}
		for _, tc := range []struct {
			ix   module.MessageIndex
			ref  string
			want []int64
		}{
			{ixA, ref.Ref, []int64{sent.ID}},
			{ixA, strings.Trim(ref.Ref, "<>"), []int64{sent.ID}},
			{ixB, " " + ref.Ref + " ", []int64{received}},
			{ixA, "<nothing@here>", []int64{}},
			{ixA, "<>", []int64{}},
		} {
			ids, err := tc.ix.FindMessages(ctx, tc.ref)
			if err != nil || !slices.Equal(ids, tc.want) {
				t.Errorf("FindMessages(%q) = %v, %v; want %v", tc.ref, ids, err, tc.want)
			}
		}
	})
}
