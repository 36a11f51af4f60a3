package eventhook

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"wharf/internal/events"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// insertMessage stores a message taken by the file poller (not dispatched), which writes
// its history lines, and returns its id.
func (b *bundle) insertMessage() int64 {
	b.t.Helper()
	ctx := context.Background()
	id, err := b.store.AllocateMessageIDs(ctx, 1)
	if err != nil {
		b.t.Fatal(err)
	}
	m := persistence.NewMessage{Message: persistence.Message{ID: id, From: "acme", To: "local", Source: "file_poller_default",
		OriginalFileName: "order.edi", Size: 1, SHA256: strings.Repeat("0", 64),
		CorrelationID: fmt.Sprint("corr-", id), OriginEventID: fmt.Sprint("event-", id)}}
	if _, err := b.store.InsertMessages(ctx, []persistence.NewMessage{m}); err != nil {
		b.t.Fatal(err)
	}
	return id
}

// TestOutboxWithoutSubscriptions: with no subscription a pass moves the cursor past the
// history without queueing anything, and a subscription made afterwards gets the events
// of what happens after it, not of what went before.
func TestOutboxWithoutSubscriptions(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		before := b.insertMessage()
		if more, err := b.rt.Pass(ctx); err != nil || more {
			t.Fatalf("Pass = %v, %v", more, err)
		}
		var cursor, last int64
		var queued []int64
		read := func() {
			t.Helper()
			queued = queued[:0]
			err := b.rt.db.Write(ctx, func(tx module.Tx) error {
				if err := tx.QueryRow(ctx, `SELECT last_id FROM event_cursor WHERE name = 'webhooks'`).Scan(&cursor); err != nil {
					return err
				}
				var err error
				if last, err = events.LastID(ctx, tx); err != nil {
					return err
				}
				rows, err := tx.Query(ctx, `SELECT message_id FROM event_webhook_deliveries ORDER BY id`)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var id int64
					if err := rows.Scan(&id); err != nil {
						return err
					}
					queued = append(queued, id)
				}
				return rows.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		read()
		if last == 0 || cursor != last || len(queued) != 0 {
			t.Fatalf("after an unsubscribed pass: cursor %d, newest history %d, queued %v", cursor, last, queued)
		}

		b.subscription("hooks", map[string]any{"events": []string{"*"}})
		after := b.insertMessage()
		if _, err := b.rt.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		read()
		if cursor != last || len(queued) == 0 {
			t.Fatalf("after a subscribed pass: cursor %d, newest history %d, queued %v", cursor, last, queued)
		}
		for _, id := range queued {
			if id != after {
				t.Fatalf("queued events of message %d; only message %d (not %d, before the subscription) should be", id, after, before)
			}
		}
	})
}
