package eventhook

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"wharf/internal/persistence"
)

// subscriptionsTTL bounds how long the outbox trusts its copy of the subscriptions
// without hearing of a change: a change announcement on the bus is lost when the bus
// drops it, and the copy is read again at least this often all the same.
const subscriptionsTTL = outboxPoll

// subscription is what the outbox needs of a subscription's record.
type subscription struct {
	name string
	cfg  Config
}

// subscriptionCache is the outbox's copy of the enabled subscriptions. A busy gateway
// passes many times a second and the subscriptions seldom change, so passes read the copy;
// a change of any plugin instance (here, or in another process over the bus) drops it.
type subscriptionCache struct {
	ttl    time.Duration // subscriptionsTTL; tests lengthen it
	mu     sync.Mutex
	subs   []subscription
	loaded time.Time // zero: not loaded
	gen    uint64
}

// invalidate drops the copy; the next pass reads the records again.
func (c *subscriptionCache) invalidate() {
	c.mu.Lock()
	c.loaded = time.Time{}
	c.gen++
	c.mu.Unlock()
}

// invalidateSubscriptions drops the outbox's copy of the subscriptions.
func (rt *Runtime) invalidateSubscriptions() { rt.subs.invalidate() }

// subscriptions are the enabled event-webhook instances of the database, whichever
// process runs them, from the copy while it is fresh. Their filters are plain fields; no
// secret is opened.
func (rt *Runtime) subscriptions(ctx context.Context) ([]subscription, error) {
	c := &rt.subs
	c.mu.Lock()
	if !c.loaded.IsZero() && time.Since(c.loaded) < c.ttl {
		subs := c.subs
		c.mu.Unlock()
		return subs, nil
	}
	gen := c.gen
	c.mu.Unlock()
	began := time.Now()
	subs, err := rt.readSubscriptions(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	// A change that raced the read wins: the copy stays cold and the next pass reads again.
	if c.gen == gen {
		c.subs, c.loaded = subs, began
	}
	c.mu.Unlock()
	return subs, nil
}

// readSubscriptions reads the enabled event-webhook instances of the database.
func (rt *Runtime) readSubscriptions(ctx context.Context) ([]subscription, error) {
	recs, err := rt.core.Store.ListPluginConfigs(ctx, persistence.PluginEventWebhook)
	if err != nil {
		return nil, fmt.Errorf("list event webhooks: %w", err)
	}
	var out []subscription
	for _, r := range recs {
		if !r.Enabled {
			continue
		}
		var c Config
		if err := json.Unmarshal(r.Config, &c); err != nil {
			return nil, fmt.Errorf("event webhook %s: stored config: %w", r.Name, err)
		}
		out = append(out, subscription{name: string(r.Name), cfg: c})
	}
	return out, nil
}
