// Package retention is the pruning job: in the sweeper role, it rolls the day's message
// counts up, removes payloads and history past their retention in bounded batches and,
// on PostgreSQL, archives whole months of history before dropping their partitions.
package retention

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/storage"
)

// Store is what the job needs of persistence.
type Store interface {
	RollupDailyCounts(ctx context.Context, now time.Time) (time.Time, error)
	PrunePayloads(ctx context.Context, now time.Time, global int, after db.PruneCursor, limit int) ([]string, int, db.PruneCursor, error)
	PruneHistory(ctx context.Context, now time.Time, global int, limit int) (int, error)
	EnsureHistoryPartitions(ctx context.Context, first time.Time, months int) error
	ExpiredHistoryMonths(ctx context.Context, now time.Time, global int) ([]persistence.HistoryPartition, error)
	ExportHistoryMonth(ctx context.Context, p persistence.HistoryPartition, w io.Writer) (int64, error)
	DropHistoryMonth(ctx context.Context, p persistence.HistoryPartition, key string, rows int64) error
	PruneIdleSessions(ctx context.Context, now time.Time, limit int) (int, error)
	PruneCallbackIDs(ctx context.Context, now time.Time, limit int) (int, error)
}

// Blobs is what the job needs of payload storage.
type Blobs interface {
	Delete(ctx context.Context, key string) error
	PutNamed(ctx context.Context, name string, r io.Reader) (storage.Blob, error)
}

// Metrics hears what each run pruned.
type Metrics interface {
	Pruned(kind string, n int)
}

// Kinds of what a run prunes, as Metrics hears them.
const (
	KindPayloads     = "payloads"
	KindHistoryLines = "history_lines"
	KindHistoryMonth = "history_months"
	KindSessions     = "idle_sessions"
	KindCallbackIDs  = "callback_ids"
)

// Batch bounds the messages or history lines one transaction prunes.
const Batch = 500

// Interval is the time between two runs; Pause is the rest between two batches, so
// pruning a large backlog never holds the database for long.
const (
	Interval = time.Hour
	Pause    = 200 * time.Millisecond
)

// Report is what one run did.
type Report struct {
	Payloads     int // messages whose payloads went
	Blobs        int // blobs deleted
	HistoryLines int
	Archives     []string // keys of the months archived and dropped
	Sessions     int      // idle ordered sessions
	CallbackIDs  int      // webhook-ids of status callbacks past their repeat window
}

// Job prunes by the retention settings.
type Job struct {
	store     Store
	blobs     Blobs
	log       *slog.Logger
	retention func(ctx context.Context) persistence.Retention
	// Now is the job's clock (time.Now by default).
	Now func() time.Time
	// Metrics, when set before Start, hears each run's counts.
	Metrics Metrics
	// Active is asked before every run whether this process is the sweeper.
	Active func(ctx context.Context) bool
	// Pause is the rest between two batches (Pause by default).
	Pause time.Duration

	done, quit chan struct{}
}

// New returns a job reading its settings through retention before every run.
func New(store Store, blobs Blobs, log *slog.Logger, retention func(ctx context.Context) persistence.Retention) *Job {
	return &Job{store: store, blobs: blobs, log: log.With("component", "retention"), retention: retention, Now: time.Now, Pause: Pause}
}

// Start runs the job every Interval until Stop.
func (j *Job) Start(ctx context.Context) error {
	j.done, j.quit = make(chan struct{}), make(chan struct{})
	go j.loop(context.WithoutCancel(ctx))
	return nil
}

// Stop ends the job after the batch in progress.
func (j *Job) Stop(ctx context.Context) error {
	if j.quit == nil {
		return nil
	}
	close(j.quit)
	select {
	case <-j.done:
	case <-ctx.Done():
	}
	return nil
}

func (j *Job) loop(ctx context.Context) {
	defer close(j.done)
	for {
		if j.Active == nil || j.Active(ctx) {
			if _, err := j.Run(ctx); err != nil && !errors.Is(err, errStopped) {
				j.log.Error("retention run failed", "err", err)
			}
		}
		t := time.NewTimer(Interval)
		select {
		case <-t.C:
		case <-j.quit:
			t.Stop()
			return
		}
	}
}

var errStopped = errors.New("retention job stopped")

// rest waits between two batches; it reports errStopped when the job is stopping.
func (j *Job) rest() error {
	if j.quit != nil {
		select {
		case <-j.quit:
			return errStopped
		default:
		}
	}
	if j.Pause <= 0 {
		return nil
	}
	t := time.NewTimer(j.Pause)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-j.quit:
		return errStopped
	}
}

// Run prunes once: partitions ahead, the daily counts (before anything is removed),
// payloads, history lines, expired history months, idle ordered sessions and old
// webhook-ids of status callbacks.
func (j *Job) Run(ctx context.Context) (Report, error) {
	var rep Report
	now := j.Now()
	set := j.retention(ctx)
	if err := j.store.EnsureHistoryPartitions(ctx, now, db.HistoryMonthsAhead); err != nil {
		return rep, err
	}
	if _, err := j.store.RollupDailyCounts(ctx, now); err != nil {
		return rep, err
	}
	defer func() {
		j.log.Info("retention run", "payloads_pruned", rep.Payloads, "blobs_deleted", rep.Blobs,
			"history_lines_pruned", rep.HistoryLines, "history_months_archived", len(rep.Archives),
			"idle_sessions_pruned", rep.Sessions, "callback_ids_pruned", rep.CallbackIDs)
	}()
	var cur db.PruneCursor
	for {
		keys, n, next, err := j.store.PrunePayloads(ctx, now, set.PayloadDays, cur, Batch)
		if err != nil {
			return rep, err
		}
		for _, k := range keys {
			// The rows are gone already: a blob that fails to go is only space, so it is
			// logged and the run goes on.
			if err := j.blobs.Delete(ctx, k); err != nil {
				j.log.Warn("delete pruned payload", "key", k, "err", err)
				continue
			}
			rep.Blobs++
		}
		rep.Payloads += n
		j.count(KindPayloads, n)
		if next == cur {
			break
		}
		cur = next
		if n > 0 {
			j.log.Info("retention progress", "payloads_pruned", rep.Payloads)
		}
		if err := j.rest(); err != nil {
			return rep, err
		}
	}
	var err error
	rep.HistoryLines, err = j.pruneAll(ctx, KindHistoryLines, now, func(ctx context.Context, now time.Time, limit int) (int, error) {
		return j.store.PruneHistory(ctx, now, set.HistoryDays, limit)
	})
	if err != nil {
		return rep, err
	}
	months, err := j.store.ExpiredHistoryMonths(ctx, now, set.HistoryDays)
	if err != nil {
		return rep, err
	}
	for _, m := range months {
		key, err := j.archive(ctx, m)
		if err != nil {
			return rep, err
		}
		rep.Archives = append(rep.Archives, key)
		j.count(KindHistoryMonth, 1)
	}
	if rep.Sessions, err = j.pruneAll(ctx, KindSessions, now, j.store.PruneIdleSessions); err != nil {
		return rep, err
	}
	rep.CallbackIDs, err = j.pruneAll(ctx, KindCallbackIDs, now, j.store.PruneCallbackIDs)
	return rep, err
}

// pruneAll runs prune in batches, resting between them, until a batch comes back short.
func (j *Job) pruneAll(ctx context.Context, kind string, now time.Time, prune func(context.Context, time.Time, int) (int, error)) (int, error) {
	total := 0
	for {
		n, err := prune(ctx, now, Batch)
		if err != nil {
			return total, err
		}
		total += n
		j.count(kind, n)
		if n < Batch {
			return total, nil
		}
		j.log.Info("retention progress", kind+"_pruned", total)
		if err := j.rest(); err != nil {
			return total, err
		}
	}
}

func (j *Job) count(kind string, n int) {
	if j.Metrics != nil && n > 0 {
		j.Metrics.Pruned(kind, n)
	}
}

// ArchiveName is where a month of history is archived in payload storage.
func ArchiveName(month time.Time) string {
	return fmt.Sprintf("history/%04d-%02d.jsonl.gz", month.Year(), int(month.Month()))
}

// archive exports a month of history as gzip-compressed JSON lines through a temporary
// file (a month may be large), stores it and then drops the partition.
func (j *Job) archive(ctx context.Context, m persistence.HistoryPartition) (string, error) {
	f, err := os.CreateTemp("", "wharf-history-*.jsonl.gz")
	if err != nil {
		return "", fmt.Errorf("archive history %s: %w", ArchiveName(m.Start), err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	zw := gzip.NewWriter(f)
	rows, err := j.store.ExportHistoryMonth(ctx, m, zw)
	if err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("archive history %s: %w", ArchiveName(m.Start), err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("archive history %s: %w", ArchiveName(m.Start), err)
	}
	blob, err := j.blobs.PutNamed(ctx, ArchiveName(m.Start), f)
	if err != nil {
		return "", fmt.Errorf("archive history %s: %w", ArchiveName(m.Start), err)
	}
	if err := j.store.DropHistoryMonth(ctx, m, blob.Key, rows); err != nil {
		return "", err
	}
	j.log.Info("history month archived and dropped", "month", m.Start.Format("2006-01"), "rows", rows, "key", blob.Key)
	return blob.Key, nil
}
