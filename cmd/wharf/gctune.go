package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// gcHeadroom is the least the heap may grow past what is live before a collection. With
// the runtime's default (GOGC=100) a gateway exchanging small messages has a live heap
// of about ten MiB and collects every ten MiB allocated, which takes a tenth of its CPU
// under load; a fixed headroom makes collections rarer there. A heap with more than
// gcHeadroom live (large messages) gets the default percentage, so what a large message
// needs is unchanged, and the soft memory limit still bounds the total.
const gcHeadroom = 32 << 20

// maxGCPercent bounds the percentage when almost nothing is live.
const maxGCPercent = 800

// tuneGC keeps the collector's headroom at least gcHeadroom unless the operator set
// GOGC: after each collection it sets the GC percentage from the live heap. Calls after
// the first do nothing.
func tuneGC() { gcTuner.Do(startGCTuner) }

var gcTuner sync.Once

func startGCTuner() {
	if os.Getenv("GOGC") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	last := 100
	var arm func()
	arm = func() {
		// The sentinel is garbage at once: its finalizer runs after the next collection
		// and arms a new one.
		runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
			metrics.Read(sample)
			p := 100
			if v := sample[0].Value; v.Kind() == metrics.KindUint64 {
				p = gcPercent(v.Uint64())
			}
			if p != last {
				debug.SetGCPercent(p)
				last = p
			}
			arm()
		})
	}
	arm()
}

// gcSentinel is too large to share a tiny allocation block with other objects, which
// would delay its finalizer.
type gcSentinel struct{ _ [32]byte }

// gcPercent is the GC percentage that gives a live heap of live bytes at least
// gcHeadroom to grow, rounded down to tens so small swings of the live heap do not
// change it each cycle.
func gcPercent(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	if live >= gcHeadroom {
		return 100
	}
	p := int(gcHeadroom*100/live) / 10 * 10
	return min(max(p, 100), maxGCPercent)
}
