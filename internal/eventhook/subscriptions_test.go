package eventhook

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"wharf/internal/bus"
	"wharf/internal/bus/bustest"
	"wharf/internal/events"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// countingStore counts the listings of plugin instances.
type countingStore struct {
	persistence.Store
	lists atomic.Int64
}

func (c *countingStore) ListPluginConfigs(ctx context.Context, typ persistence.PluginType) ([]persistence.PluginConfig, error) {
	c.lists.Add(1)
	return c.Store.ListPluginConfigs(ctx, typ)
}

// TestOutboxReadsSubscriptionsOnChange: a busy outbox reads the subscriptions once, not
// on every pass, and reads them again when a change is announced on the bus, so a
// subscription made in another process gets the events that follow it.
func TestOutboxReadsSubscriptionsOnChange(t *testing.T) {
	forEach(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		store := &countingStore{Store: b.store}
		mem := &bustest.Mem{}
		rt := New(module.Core{Store: store, DB: b.store.ModuleSQL(), Sealer: b.rt.core.Sealer, Alerts: b.alerts, Bus: mem,
			Logger: slog.New(slog.DiscardHandler)})
		rt.subs.ttl = time.Hour // only an announced change makes it read again
		if err := rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Stop(context.Background()) })

		cursorAtNewest := func() bool {
			var cursor, last int64
			err := rt.db.Write(ctx, func(tx module.Tx) error {
				if err := tx.QueryRow(ctx, `SELECT last_id FROM event_cursor WHERE name = 'webhooks'`).Scan(&cursor); err != nil {
					return err
				}
				var err error
				last, err = events.LastID(ctx, tx)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return last > 0 && cursor == last
		}
		for range 5 {
			b.insertMessage()
			_ = mem.Publish(bus.AllMessageEventsSubject, nil) // the in-memory bus matches subjects literally
			b.waitFor("the cursor past the newest history", cursorAtNewest)
		}
		if n := store.lists.Load(); n != 1 {
			t.Fatalf("five busy passes listed the subscriptions %d times, want once", n)
		}

		// Another process's runtime makes a subscription: this one hears of it on the bus.
		other := New(module.Core{Store: b.store, DB: b.store.ModuleSQL(), Sealer: b.rt.core.Sealer, Alerts: b.alerts,
			Logger: slog.New(slog.DiscardHandler)})
		body, _ := json.Marshal(map[string]any{"name": "elsewhere", "url": b.url, "events": []string{"*"}})
		if _, _, err := other.Create(ctx, body); err != nil {
			t.Fatal(err)
		}
		_ = mem.Publish(bus.ConfigChangedSubject, []byte("plugins"))
		b.waitFor("the subscriptions read again", func() bool { return store.lists.Load() == 2 })
		id := b.insertMessage()
		_ = mem.Publish(bus.AllMessageEventsSubject, nil)
		b.waitFor("an event queued for the new subscription", func() bool {
			var n int64
			err := rt.db.Write(ctx, func(tx module.Tx) error {
				return tx.QueryRow(ctx, `SELECT COUNT(*) FROM event_webhook_deliveries WHERE instance = 'elsewhere' AND message_id = ?`, id).Scan(&n)
			})
			if err != nil {
				t.Fatal(err)
			}
			return n > 0
		})
	})
}
