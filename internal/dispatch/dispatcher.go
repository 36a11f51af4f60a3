package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"wharf/internal/logging"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/retry"
	"wharf/internal/storage"
)

// Store is what the dispatcher needs of persistence.
type Store interface {
	ListRoutes(ctx context.Context) ([]persistence.Route, error)
	GetParty(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) (persistence.Party, error)
	AllocateMessageIDs(ctx context.Context, n int) (int64, error)
	InsertMessages(ctx context.Context, msgs []persistence.NewMessage) ([]persistence.Message, error)
	GetMessage(ctx context.Context, id int64) (persistence.Message, error)
	FindMessageByOrigin(ctx context.Context, source persistence.InstanceName, originEventID string) (persistence.Message, error)
	Redispatch(ctx context.Context, messageID int64, targets []persistence.InstanceName, sessions map[persistence.InstanceName]persistence.DeliverySession, overrides map[persistence.InstanceName]*retry.Policy, actor string) ([]persistence.Delivery, error)
	Redeliver(ctx context.Context, deliveryID int64, mode persistence.ResendMode, actor string) (persistence.Delivery, error)
	ResubmitDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error)
	SkipDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error)
	ActOnDeliveries(ctx context.Context, action persistence.DeliveryAction, ids []int64, actor string) ([]persistence.DeliveryActionResult, error)
	ResumePartner(ctx context.Context, partner persistence.PartyName, actor string) ([]persistence.Delivery, error)
}

// Blobs stores payloads.
type Blobs interface {
	Put(ctx context.Context, messageID int64, stage persistence.PayloadStage, r io.Reader, opts ...storage.PutOption) (storage.Blob, error)
	Sync(ctx context.Context, keys []string) error
	Delete(ctx context.Context, key string) error
}

// Waker announces that a target has due work; wake-ups are lossy, so errors are only
// logged.
type Waker interface {
	Wake(targets []persistence.InstanceName)
}

// Dispatcher ingests documents and routes messages.
type Dispatcher struct {
	store  Store
	blobs  Blobs
	waker  Waker
	log    *slog.Logger
	routes routeCache
	now    func() time.Time
	ids    idPool

	partiesMu sync.Mutex
	parties   map[persistence.PartyName]time.Time // known to exist, with when that was seen

	// Tracer makes each message's dispatch span (tracing.go); nil traces nothing.
	Tracer trace.Tracer
}

// partyTTL bounds how long a party seen to exist is taken on trust: a source that sends
// one document per request (a receiver) would otherwise read the parties for each.
const partyTTL = 2 * time.Second

// idPool hands out message ids from a block reserved in one commit, so a source that
// ingests one document at a time (a receiver answering each request) does not pay a
// commit for its id. Ids of a block not used before the process stops are skipped.
type idPool struct {
	mu        sync.Mutex
	next, end int64
}

// idBlock is how many ids one reservation takes.
const idBlock = 64

// allocate returns the first of n consecutive message ids.
func (d *Dispatcher) allocate(ctx context.Context, n int) (int64, error) {
	d.ids.mu.Lock()
	defer d.ids.mu.Unlock()
	if d.ids.end-d.ids.next < int64(n) {
		block := max(n, idBlock)
		first, err := d.store.AllocateMessageIDs(ctx, block)
		if err != nil {
			return 0, err
		}
		d.ids.next, d.ids.end = first, first+int64(block)
	}
	first := d.ids.next
	d.ids.next += int64(n)
	return first, nil
}

// New returns a dispatcher.
func New(store Store, blobs Blobs, waker Waker, log *slog.Logger) *Dispatcher {
	return &Dispatcher{store: store, blobs: blobs, waker: waker, log: log, now: time.Now}
}

var _ module.Ingester = (*Dispatcher)(nil)

// RoutesChanged drops the route cache; the next match reloads it.
func (d *Dispatcher) RoutesChanged(context.Context) { d.routes.invalidate() }

// Targets matches the current routes.
func (d *Dispatcher) Targets(ctx context.Context, source persistence.InstanceName, from, to persistence.PartyName) ([]persistence.InstanceName, error) {
	routes, err := d.routes.get(ctx, d.store.ListRoutes)
	if err != nil {
		return nil, err
	}
	return Match(routes, source, from, to), nil
}

// matchRoutes matches the current routes, with the route that decided each target.
func (d *Dispatcher) matchRoutes(ctx context.Context, source persistence.InstanceName, from, to persistence.PartyName) ([]persistence.Route, error) {
	routes, err := d.routes.get(ctx, d.store.ListRoutes)
	if err != nil {
		return nil, err
	}
	return MatchRoutes(routes, source, from, to), nil
}

// Ingest stores each document as a message with its payload, matches routes, and
// dispatches the whole batch in one transaction. Items naming an unknown party are
// refused one by one; a storage or database failure fails the batch and leaves nothing.
func (d *Dispatcher) Ingest(ctx context.Context, items []module.Incoming) ([]module.IngestResult, error) {
	results := make([]module.IngestResult, len(items))
	known := map[persistence.PartyName]bool{}
	var accept []int
	meta := make([]map[string]string, len(items))
	for i, it := range items {
		if err := d.checkItem(ctx, it, known); err != nil {
			results[i].Err = err
			continue
		}
		m, err := persistence.NormalizeMetadata(it.Metadata)
		if err != nil {
			results[i].Err = err
			continue
		}
		meta[i] = m
		accept = append(accept, i)
	}
	if len(accept) == 0 {
		return results, nil
	}
	// Routing is decided first, from the in-memory cache, so a failure to load routes
	// leaves nothing written.
	targets := make([][]persistence.InstanceName, len(accept))
	sessions := make([]map[persistence.InstanceName]persistence.DeliverySession, len(accept))
	overrides := make([]map[persistence.InstanceName]*retry.Policy, len(accept))
	for n, i := range accept {
		it := items[i]
		if it.Refused != "" {
			continue
		}
		if it.Target != "" {
			targets[n] = []persistence.InstanceName{it.Target}
			continue
		}
		rs, err := d.matchRoutes(ctx, it.Source, it.From, it.To)
		if err != nil {
			return nil, fmt.Errorf("ingest: %w", err)
		}
		for _, r := range rs {
			targets[n] = append(targets[n], r.Target)
		}
		sessions[n] = sessionsOf(rs, persistence.Message{From: it.From, To: it.To, Metadata: meta[i]})
		overrides[n] = retryOf(rs)
	}
	first, err := d.allocate(ctx, len(accept))
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	blobs, err := d.putBlobs(ctx, items, accept, first)
	if err != nil {
		d.deleteBlobs(ctx, blobs)
		return nil, fmt.Errorf("ingest: store payload: %w", err)
	}
	now := d.now().UTC()
	news := make([]persistence.NewMessage, len(accept))
	for n, i := range accept {
		it, id, blob := items[i], first+int64(n), blobs[n][0]
		var payloads []persistence.Payload
		if it.Body != nil {
			payloads = append(payloads, persistence.Payload{MessageID: id, Stage: persistence.PayloadUnpacked, Key: blob.Key, Size: blob.Size, SHA256: blob.SHA256, CreatedAt: now})
		}
		for k, ex := range it.Extra {
			b := blobs[n][k+1]
			payloads = append(payloads, persistence.Payload{MessageID: id, Stage: ex.Stage, Key: b.Key, Size: b.Size, SHA256: b.SHA256, CreatedAt: now})
		}
		news[n] = persistence.NewMessage{
			Message: persistence.Message{
				ID:               id,
				Stage:            persistence.StageAccepted,
				Status:           persistence.StatusReceived,
				Refusal:          refusalOf(it),
				From:             it.From,
				To:               it.To,
				Source:           it.Source,
				OriginalFileName: it.FileName,
				Size:             blob.Size,
				SHA256:           blob.SHA256,
				CorrelationID:    orGenerated(it.CorrelationID, now),
				OriginEventID:    orGenerated(it.OriginEventID, now),
				Metadata:         meta[i],
				CreatedAt:        now,
				UpdatedAt:        now,
			},
			Payloads: payloads,
			Dispatch: true,
			Targets:  targets[n],
			Sessions: sessions[n],
			Retry:    overrides[n],
			Actor:    actorOr(it.Actor, "source:"+string(it.Source)),
			// A message sent by hand is audited with its insert.
			ByOperator:    it.ByOperator,
			RefusalReason: it.Refused,
		}
	}
	spans := d.startSpans(ctx, news)
	stored, err := d.store.InsertMessages(ctx, news)
	endSpans(spans, err)
	if err != nil {
		d.deleteBlobs(ctx, blobs)
		return nil, fmt.Errorf("ingest: %w", err)
	}
	var wake []persistence.InstanceName
	for n, i := range accept {
		results[i].Message = stored[n]
		wake = appendNew(wake, targets[n]...)
		if len(targets[n]) == 0 && items[i].Refused == "" {
			d.log.WarnContext(logging.WithMessage(ctx, stored[n].ID, stored[n].CorrelationID), "message not routed", "source", stored[n].Source, "from", stored[n].From, "to", stored[n].To)
		}
	}
	d.waker.Wake(wake)
	return results, nil
}

// refusalOf is the refusal class of an incoming document: refused when its source
// refused it.
func refusalOf(it module.Incoming) persistence.Refusal {
	if it.Refused != "" {
		return persistence.RefusalRefused
	}
	return persistence.RefusalNone
}

// deleteBlobs removes the payloads of messages that were not stored.
func (d *Dispatcher) deleteBlobs(ctx context.Context, blobs [][]storage.Blob) {
	for _, bs := range blobs {
		for _, b := range bs {
			if b.Key == "" {
				continue
			}
			if err := d.blobs.Delete(context.WithoutCancel(ctx), b.Key); err != nil {
				d.log.Warn("remove payload of a message that was not stored", "key", b.Key, "err", err)
			}
		}
	}
}

// putBlobs writes the batch's payloads (each item's document first, then its extra
// stages) in parallel without syncing each, then makes them all durable at once, so a
// batch pays for one flush rather than two syncs per blob. Every blob is durable when it
// returns without error.
func (d *Dispatcher) putBlobs(ctx context.Context, items []module.Incoming, accept []int, first int64) ([][]storage.Blob, error) {
	blobs := make([][]storage.Blob, len(accept))
	var errs []error
	var mu sync.Mutex
	sem := make(chan struct{}, putParallelism)
	var wg sync.WaitGroup
	// A small batch held in memory (a received AS2 message) is written by the caller:
	// goroutines would cost more hand-offs than the parallel writes save.
	inline := smallInMemory(items, accept)
	put := func(n, k int, stage persistence.PayloadStage, body io.Reader) {
		write := func() {
			b, err := d.blobs.Put(ctx, first+int64(n), stage, body, storage.DeferSync())
			mu.Lock()
			defer mu.Unlock()
			blobs[n][k] = b
			if err != nil {
				errs = append(errs, err)
			}
		}
		if inline {
			write()
			return
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			write()
		}()
	}
	for n, i := range accept {
		blobs[n] = make([]storage.Blob, 1+len(items[i].Extra))
		if items[i].Body != nil {
			put(n, 0, persistence.PayloadUnpacked, items[i].Body)
		}
		for k, ex := range items[i].Extra {
			put(n, k+1, ex.Stage, ex.Body)
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return blobs, err
	}
	var keys []string
	for _, bs := range blobs {
		for _, b := range bs {
			if b.Key != "" {
				keys = append(keys, b.Key)
			}
		}
	}
	if err := d.blobs.Sync(ctx, keys); err != nil {
		return blobs, err
	}
	return blobs, nil
}

// putParallelism bounds concurrent payload writes of one batch.
const putParallelism = 8

// inlineBytes is the most a batch held in memory may hold to be written without
// goroutines.
const inlineBytes = 1 << 20

// smallInMemory reports whether every payload of the accepted items is held in memory
// (it tells its length) and together they are at most inlineBytes.
func smallInMemory(items []module.Incoming, accept []int) bool {
	total := 0
	for _, i := range accept {
		bodies := []io.Reader{items[i].Body}
		for _, ex := range items[i].Extra {
			bodies = append(bodies, ex.Body)
		}
		for _, b := range bodies {
			if b == nil {
				continue
			}
			l, ok := b.(interface{ Len() int })
			if !ok {
				return false
			}
			if total += l.Len(); total > inlineBytes {
				return false
			}
		}
	}
	return true
}

func (d *Dispatcher) checkItem(ctx context.Context, it module.Incoming, known map[persistence.PartyName]bool) error {
	if _, err := persistence.ParseInstanceName(string(it.Source)); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if _, err := persistence.ParseFileName(string(it.FileName)); err != nil {
		return err
	}
	if it.Body == nil && it.Refused == "" {
		return errors.New("no document body")
	}
	seen := map[persistence.PayloadStage]bool{persistence.PayloadUnpacked: true}
	for _, ex := range it.Extra {
		if _, err := persistence.ParsePayloadStage(string(ex.Stage)); err != nil {
			return fmt.Errorf("extra payload: %w", err)
		}
		if seen[ex.Stage] || ex.Body == nil {
			return fmt.Errorf("extra payload %s is given twice or has no body", ex.Stage)
		}
		seen[ex.Stage] = true
	}
	for _, p := range []persistence.PartyName{it.From, it.To} {
		if known[p] {
			continue
		}
		ok, err := d.partyExists(ctx, p)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w %q", module.ErrUnknownParty, p)
		}
		known[p] = true
	}
	return nil
}

func (d *Dispatcher) partyExists(ctx context.Context, name persistence.PartyName) (bool, error) {
	if _, err := persistence.ParsePartyName(string(name)); err != nil {
		return false, nil
	}
	now := d.now()
	d.partiesMu.Lock()
	seen, ok := d.parties[name]
	d.partiesMu.Unlock()
	if ok && now.Sub(seen) < partyTTL {
		return true, nil
	}
	for _, k := range persistence.AllPartyKinds {
		_, err := d.store.GetParty(ctx, k, name)
		if err == nil {
			d.partiesMu.Lock()
			if d.parties == nil || len(d.parties) > 4096 {
				d.parties = map[persistence.PartyName]time.Time{}
			}
			d.parties[name] = now
			d.partiesMu.Unlock()
			return true, nil
		}
		if !errors.Is(err, persistence.ErrNotFound) {
			return false, fmt.Errorf("look up party %s: %w", name, err)
		}
	}
	return false, nil
}

// MessageExists reports whether source already stored a message with this origin event
// id; sources use it to reconcile work interrupted by a crash.
func (d *Dispatcher) MessageExists(ctx context.Context, source persistence.InstanceName, originEventID string) (bool, error) {
	_, err := d.store.FindMessageByOrigin(ctx, source, originEventID)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, persistence.ErrNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("look up message by origin event id: %w", err)
	}
}

// Redispatch matches the message's routes again, adds the deliveries it lacks and
// requeues queued and stalled ones.
func (d *Dispatcher) Redispatch(ctx context.Context, messageID int64, actor string) ([]persistence.Delivery, error) {
	d.routes.invalidate()
	msg, err := d.store.GetMessage(ctx, messageID)
	if err != nil {
		return nil, fmt.Errorf("redispatch message %d: %w", messageID, err)
	}
	rs, err := d.matchRoutes(ctx, msg.Source, msg.From, msg.To)
	if err != nil {
		return nil, fmt.Errorf("redispatch message %d: %w", messageID, err)
	}
	targets := make([]persistence.InstanceName, len(rs))
	for i, r := range rs {
		targets[i] = r.Target
	}
	// The stored metadata keys the sessions of added deliveries as at the first dispatch.
	due, err := d.store.Redispatch(ctx, messageID, targets, sessionsOf(rs, msg), retryOf(rs), actor)
	if err != nil {
		return nil, fmt.Errorf("redispatch message %d: %w", messageID, err)
	}
	d.wakeFor(due)
	return due, nil
}

// Redeliver requeues one delivery, to be sent as mode says.
func (d *Dispatcher) Redeliver(ctx context.Context, deliveryID int64, mode persistence.ResendMode, actor string) (persistence.Delivery, error) {
	del, err := d.store.Redeliver(ctx, deliveryID, mode, actor)
	if err != nil {
		return persistence.Delivery{}, fmt.Errorf("redeliver delivery %d: %w", deliveryID, err)
	}
	d.wakeFor([]persistence.Delivery{del})
	return del, nil
}

func (d *Dispatcher) wakeFor(ds []persistence.Delivery) {
	var targets []persistence.InstanceName
	for _, x := range ds {
		targets = appendNew(targets, x.Target)
	}
	if len(targets) > 0 {
		d.waker.Wake(targets)
	}
}

// appendNew appends the names list lacks.
func appendNew(list []persistence.InstanceName, names ...persistence.InstanceName) []persistence.InstanceName {
	for _, n := range names {
		if !slices.Contains(list, n) {
			list = append(list, n)
		}
	}
	return list
}

// orGenerated is id, else a new one: 16 bytes in hex, the first six the time in
// milliseconds and the rest random. Ids made one after another then sort together, so
// the index on them grows at its end instead of at a random place per message.
func orGenerated(id string, now time.Time) string {
	if id != "" {
		return id
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}

func actorOr(a, def string) string {
	if a != "" {
		return a
	}
	return def
}
