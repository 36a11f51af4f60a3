// Package bustest gives package tests an in-process bus whose Publish calls the
// subscribers at once, before it returns, so a test sees the effect of a message without
// waiting for it. Tests of the whole gateway use the real embedded bus.
package bustest

import (
	"sync"

	"wharf/internal/bus"
	"wharf/internal/persistence"
)

// Mem is the bus of module.Bus and the delivery engine's wake-up signals. The zero value
// is ready to use.
type Mem struct {
	mu   sync.Mutex
	next int
	subs map[string]map[int]func(string, []byte)
}

// Publish calls every subscriber of subject, in the caller's goroutine.
func (b *Mem) Publish(subject string, data []byte) error {
	b.mu.Lock()
	var fns []func(string, []byte)
	for _, fn := range b.subs[subject] {
		fns = append(fns, fn)
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn(subject, data)
	}
	return nil
}

// Subscribe calls fn for every message published on subject until the returned function
// is called.
func (b *Mem) Subscribe(subject string, fn func(string, []byte)) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[string]map[int]func(string, []byte){}
	}
	if b.subs[subject] == nil {
		b.subs[subject] = map[int]func(string, []byte){}
	}
	b.next++
	id := b.next
	b.subs[subject][id] = fn
	return func() {
		b.mu.Lock()
		delete(b.subs[subject], id)
		b.mu.Unlock()
	}, nil
}

// Wake publishes the targets' wake-up subjects, as the gateway's engine signals do.
func (b *Mem) Wake(targets []persistence.InstanceName) {
	for _, t := range targets {
		_ = b.Publish(bus.WakeupSubject(t), nil)
	}
}

// OnWake calls fn when target is woken.
func (b *Mem) OnWake(target persistence.InstanceName, fn func()) (func(), error) {
	return b.Subscribe(bus.WakeupSubject(target), func(string, []byte) { fn() })
}
