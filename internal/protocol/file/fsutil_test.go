package file

import (
	"path/filepath"
	"sync"
	"testing"
)

// TestGroupSyncCoversEveryCaller runs many concurrent syncs of one directory: each
// returns without error, no state is kept for an idle directory, and a failing sync is
// reported.
func TestGroupSyncCoversEveryCaller(t *testing.T) {
	dir := t.TempDir()
	var g groupSync
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- g.Sync(dir)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	kept := len(g.dirs)
	g.mu.Unlock()
	if kept != 0 {
		t.Errorf("%d idle directories are kept", kept)
	}
	if err := g.Sync(filepath.Join(dir, "missing")); err == nil {
		t.Error("a sync of a missing directory reported no error")
	}
}
