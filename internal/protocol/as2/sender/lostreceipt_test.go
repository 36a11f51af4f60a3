package sender

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// A process that ends after a sync MDN was recorded and its blob written, but before the
// attempt's outcome recorded the receipt stage, loses nothing: the next attempt settles
// the delivery from the record without sending again and records the MDN it kept as the
// message's receipt.
func TestReceiptRecoveredAfterLostOutcome(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		b, p := harness(t, s, nil)
		msg := b.ingest(t, "po.edi", []byte("PO 1\r\n"))
		p.setAnswer(p.answerMDN(positive))

		// The first attempt gets its MDN; its outcome, which records the receipt stage
		// with the delivery, never reaches the store.
		c := b.claim(t, time.Now())
		first := b.deliver(c)
		if first.Kind != persistence.OutcomeDelivered || len(first.Payloads) != 1 {
			t.Fatalf("first attempt: %s %v with %d payloads, want delivered with the receipt", first.Kind, first.Err, len(first.Payloads))
		}
		if got := b.receipt(t, msg.ID); got != nil {
			t.Fatal("the receipt stage was recorded before the outcome")
		}
		if _, err := s.ExpireLeases(ctx, time.Now().Add(2*time.Minute), 10); err != nil {
			t.Fatal(err)
		}

		_, res := b.attempt(t, time.Now().Add(3*time.Minute))
		if res.Kind != persistence.OutcomeDelivered {
			t.Fatalf("attempt after the lost outcome: %s %v", res.Kind, res.Err)
		}
		if n := len(p.requests()); n != 1 {
			t.Fatalf("%d requests, want 1: a settled Message-ID is not sent again", n)
		}
		got := b.receipt(t, msg.ID)
		if got == nil {
			t.Fatal("the message has no receipt stage after the lost outcome")
		}
		r, err := b.blobs.Open(ctx, first.Payloads[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var want bytes.Buffer
		if _, err := want.ReadFrom(r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) || !bytes.Contains(got, []byte("multipart/signed")) {
			t.Fatalf("the receipt stage holds %d bytes, not the MDN the first attempt got", len(got))
		}
		pl, err := s.GetPayload(ctx, msg.ID, persistence.PayloadReceipt)
		if err != nil {
			t.Fatal(err)
		}
		if pl.Size != first.Payloads[0].Size || pl.SHA256 != first.Payloads[0].SHA256 {
			t.Errorf("receipt recorded as %d bytes %s, want %d bytes %s", pl.Size, pl.SHA256, first.Payloads[0].Size, first.Payloads[0].SHA256)
		}
	})
}

// A receipt blob that an attempt wrote before its process ended, without the MDN's
// record, does not keep the next attempt's MDN from becoming the message's receipt: the
// attempt that records its MDN and holds the claim replaces the blob no row names.
func TestReceiptReplacesUnrecordedBlob(t *testing.T) {
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		b, p := harness(t, s, nil)
		msg := b.ingest(t, "po.edi", []byte("PO 1\r\n"))
		p.setAnswer(answerStatus(http.StatusServiceUnavailable, nil))
		_, res := b.attempt(t, time.Now())
		if res.Kind != persistence.OutcomeRetry {
			t.Fatalf("first attempt: %s %v, want a retry", res.Kind, res.Err)
		}
		if _, err := b.blobs.Put(ctx, msg.ID, persistence.PayloadReceipt, strings.NewReader("left by an attempt that ended")); err != nil {
			t.Fatal(err)
		}

		p.setAnswer(p.answerMDN(positive))
		_, res = b.attempt(t, res.At.Add(time.Second))
		if res.Kind != persistence.OutcomeDelivered {
			t.Fatalf("second attempt: %s %v", res.Kind, res.Err)
		}
		got := b.receipt(t, msg.ID)
		if !bytes.HasPrefix(got, []byte("MIME-Version: 1.0\r\nContent-Type: multipart/signed")) {
			t.Fatalf("the receipt stage holds %q, want the MDN the second attempt got", got[:min(len(got), 60)])
		}
		if recs := b.records(t, msg.ID); len(recs) != 1 || !recs[0].ReceiptStored {
			t.Fatalf("records: %+v, want one holding the receipt", recs)
		}
	})
}
