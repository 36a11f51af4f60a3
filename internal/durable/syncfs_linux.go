package durable

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// CanSyncFS tells whether SyncFS works here. One syncfs(2) makes every write and rename on
// the file system durable, so a batch of files can share one flush instead of syncing
// each file and directory.
const CanSyncFS = true

// SyncFS flushes the file system holding dir and reports write-back errors since the
// last flush. Concurrent callers on one file system share flushes: a caller returns once
// a flush that began after its call has finished, which covers everything it wrote
// before calling, so callers that arrive while a flush runs pay for one more between
// them rather than one each.
func SyncFS(dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("flush file system of %s: %w", dir, &os.PathError{Op: "stat", Path: dir, Err: err})
	}
	return fsGroups.sync(uint64(st.Dev), dir)
}

func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("flush file system of %s: %w", dir, err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("flush file system of %s: %w", dir, err)
	}
	return nil
}

var fsGroups = &fsGroup{devs: map[uint64]*fsFlush{}}

// fsGroup runs the flushes of each file system one at a time, with group commit.
type fsGroup struct {
	mu   sync.Mutex
	devs map[uint64]*fsFlush
}

type fsFlush struct {
	cond      *sync.Cond
	running   bool
	started   uint64 // flushes begun
	completed uint64 // flushes finished
	failedAt  uint64 // the last flush that failed, with err
	err       error
}

func (g *fsGroup) sync(dev uint64, dir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.devs[dev]
	if f == nil {
		f = &fsFlush{cond: sync.NewCond(&g.mu)}
		g.devs[dev] = f
	}
	ticket := f.started + 1
	for f.completed < ticket {
		if f.running {
			f.cond.Wait()
			continue
		}
		f.running = true
		f.started++
		n := f.started
		g.mu.Unlock()
		err := syncFS(dir)
		g.mu.Lock()
		f.completed, f.running = n, false
		if err != nil {
			f.failedAt, f.err = n, err
		}
		f.cond.Broadcast()
	}
	if f.failedAt >= ticket {
		return f.err
	}
	return nil
}
