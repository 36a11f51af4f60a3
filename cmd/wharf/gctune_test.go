package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, maxGCPercent},
		{1 << 20, maxGCPercent}, // 3200 % would leave the headroom; the bound is lower
		{8 << 20, 400},          // 32 MiB of headroom over 8 MiB live
		{12 << 20, 260},         // 266 %, rounded down to tens
		{gcHeadroom - 1, 100},   // the default already leaves the headroom
		{gcHeadroom, 100},       // a large message: the runtime's default
		{512 << 20, 100},
	} {
		if got := gcPercent(tc.live); got != tc.want {
			t.Errorf("gcPercent(%d bytes live) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

// After a collection the tuner has raised the percentage for the test's small heap.
func TestTuneGCRaisesThePercentage(t *testing.T) {
	t.Setenv("GOGC", "")
	tuneGC()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		runtime.Gosched()
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		if p > 100 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percentage still %d after collections with a small heap", p)
		}
		time.Sleep(time.Millisecond)
	}
}
