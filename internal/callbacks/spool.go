// Package callbacks takes the signed status callbacks of in-house systems: it verifies
// and decodes a request (handler.go) and keeps each accepted callback in a durable spool
// until the store has applied it (this file).
//
// The spool is a journal file in the data directory. A callback is answered 202 only
// after its line is appended and the file is synced, so an accepted callback survives a
// crash; appends arriving together share one sync. One worker applies what the journal
// holds to the store in batches, in order, and then trims the journal. A crash between
// the store's commit and the trim applies the batch again at the next start, which writes
// nothing new: the store keeps one row per (target, webhook-id).
//
// A slow or unavailable database therefore holds up only the worker, never the caller.
package callbacks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"wharf/internal/alert"
	"wharf/internal/durable"
	"wharf/internal/persistence"
)

// Applier applies verified callbacks (db.Store).
type Applier interface {
	ApplyCallbacks(ctx context.Context, cbs []persistence.StatusCallback) ([]persistence.CallbackOutcome, error)
}

// Outcomes hears what became of each applied callback (the metrics); may be nil.
type Outcomes interface {
	CallbackApplied(target persistence.InstanceName, outcome persistence.CallbackOutcome)
}

// JournalName is the spool's file in its directory.
const JournalName = "callbacks.journal"

const (
	maxBatch     = 500
	retryDelay   = 2 * time.Second
	maxLineBytes = 64 << 10
)

// ErrStopped is an append to a spool that is stopping.
var ErrStopped = errors.New("the status callback spool is stopping")

// Spool is the durable queue of accepted callbacks.
type Spool struct {
	dir      string
	store    Applier
	outcomes Outcomes
	log      *slog.Logger
	// Alerts hears of each verified callback that changed nothing (it named no delivery,
	// or the store refused it): the in-house system said something nobody took. Set it
	// before Start; nil raises nothing.
	Alerts alert.Raiser

	mu      sync.Mutex // guards f and pending; held while the journal is written
	f       *os.File
	pending []persistence.StatusCallback // journaled and not yet applied, in journal order

	appends chan appendReq
	wake    chan struct{}
	quit    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

type appendReq struct {
	cb   persistence.StatusCallback
	done chan error
}

// Open opens (or creates) the journal in dir and reads back what an earlier run accepted
// and did not apply. A torn last line (a crash during an append, never answered) is cut.
func Open(dir string, store Applier, outcomes Outcomes, log *slog.Logger) (*Spool, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open status callback spool: %w", err)
	}
	path := filepath.Join(dir, JournalName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open status callback spool: %w", err)
	}
	pending, good, err := readJournal(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read status callback spool %s: %w", path, err)
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, fmt.Errorf("cut the torn end of %s: %w", path, err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("open status callback spool: %w", err)
	}
	if len(pending) > 0 {
		log.Info("status callbacks accepted before the last stop are applied again", "count", len(pending))
	}
	return &Spool{dir: dir, store: store, outcomes: outcomes, log: log, f: f, pending: pending,
		appends: make(chan appendReq), wake: make(chan struct{}, 1), quit: make(chan struct{})}, nil
}

// readJournal reads the valid lines from the start; good is the offset after the last.
func readJournal(f *os.File) ([]persistence.StatusCallback, int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, err
	}
	var out []persistence.StatusCallback
	var good int64
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, good, nil // a line without its newline is torn
		}
		if err != nil {
			return nil, 0, err
		}
		cb, ok := decodeLine(line)
		if !ok {
			return out, good, nil
		}
		out = append(out, cb)
		good += int64(len(line))
	}
}

// encodeLine is one journal line: the CRC-32 of the JSON, a space, the JSON, a newline.
func encodeLine(cb persistence.StatusCallback) ([]byte, error) {
	js, err := json.Marshal(cb)
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "%08x %s\n", crc32.ChecksumIEEE(js), js), nil
}

func decodeLine(line []byte) (persistence.StatusCallback, bool) {
	var cb persistence.StatusCallback
	line = bytes.TrimSuffix(line, []byte("\n"))
	sum, js, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(sum) != 8 || len(line) > maxLineBytes {
		return cb, false
	}
	var want uint32
	if _, err := fmt.Sscanf(string(sum), "%08x", &want); err != nil || crc32.ChecksumIEEE(js) != want {
		return cb, false
	}
	if err := json.Unmarshal(js, &cb); err != nil {
		return cb, false
	}
	return cb, true
}

// Start runs the journal's writer and the worker that applies it.
func (s *Spool) Start() {
	s.wg.Add(2)
	go s.writer()
	go s.worker()
	s.poke()
}

// Append journals cb and returns once it is durable. The caller answers only then.
func (s *Spool) Append(ctx context.Context, cb persistence.StatusCallback) error {
	req := appendReq{cb: cb, done: make(chan error, 1)}
	select {
	case s.appends <- req:
	case <-s.quit:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once handed over, the append finishes (durable or failed) whatever the caller does.
	return <-req.done
}

// writer appends what is handed over, every append waiting at the time in one write and
// one sync.
func (s *Spool) writer() {
	defer s.wg.Done()
	for {
		var batch []appendReq
		select {
		case req := <-s.appends:
			batch = append(batch, req)
		case <-s.quit:
			return
		}
	more:
		for len(batch) < maxBatch {
			select {
			case req := <-s.appends:
				batch = append(batch, req)
			default:
				break more
			}
		}
		err := s.journal(batch)
		for _, req := range batch {
			req.done <- err
		}
		if err == nil {
			s.poke()
		}
	}
}

func (s *Spool) journal(batch []appendReq) error {
	var buf []byte
	cbs := make([]persistence.StatusCallback, 0, len(batch))
	for _, req := range batch {
		line, err := encodeLine(req.cb)
		if err != nil {
			return fmt.Errorf("journal status callback: %w", err)
		}
		buf = append(buf, line...)
		cbs = append(cbs, req.cb)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	off, err := s.f.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("journal status callbacks: %w", err)
	}
	if _, err := s.f.Write(buf); err != nil {
		// Nothing half-written stays: a later line must not follow a torn one.
		_ = s.f.Truncate(off)
		return fmt.Errorf("journal status callbacks: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		_ = s.f.Truncate(off)
		return fmt.Errorf("sync status callback journal: %w", err)
	}
	s.pending = append(s.pending, cbs...)
	return nil
}

func (s *Spool) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// worker applies the journal whenever it grew, and again after a failure.
func (s *Spool) worker() {
	defer s.wg.Done()
	retry := time.NewTimer(retryDelay)
	retry.Stop()
	for {
		select {
		case <-s.wake:
		case <-retry.C:
		case <-s.quit:
			return
		}
		for {
			n, err := s.applyOnce(context.Background())
			if err != nil {
				s.log.Error("apply status callbacks; trying again", "count", n, "error", err)
				retry.Reset(retryDelay)
				break
			}
			if n == 0 {
				break
			}
		}
	}
}

// applyOnce applies the oldest batch of the journal and trims it; n is the batch's size.
func (s *Spool) applyOnce(ctx context.Context) (int, error) {
	s.mu.Lock()
	batch := s.pending[:min(len(s.pending), maxBatch):min(len(s.pending), maxBatch)]
	s.mu.Unlock()
	if len(batch) == 0 {
		return 0, nil
	}
	outs, err := s.store.ApplyCallbacks(ctx, batch)
	var fe *persistence.FieldError
	if errors.As(err, &fe) {
		// One callback the store refuses must not hold the others up for ever.
		outs, err = s.applyEach(ctx, batch)
	}
	if err != nil {
		return len(batch), err
	}
	for i, o := range outs {
		if s.outcomes != nil && o != "" {
			s.outcomes.CallbackApplied(batch[i].Target, o)
		}
		if o == persistence.CallbackUnmatched {
			s.log.Warn("status callback names no delivery of its target", "target", batch[i].Target,
				"webhook_id", batch[i].WebhookID)
			s.unapplied(batch[i], "it names no delivery of "+string(batch[i].Target))
		}
	}
	return len(batch), s.trim(len(batch))
}

// applyEach applies a batch one callback at a time, dropping (with an error line) those
// the store refuses as invalid; an outcome left empty is such a one.
func (s *Spool) applyEach(ctx context.Context, batch []persistence.StatusCallback) ([]persistence.CallbackOutcome, error) {
	outs := make([]persistence.CallbackOutcome, len(batch))
	for i, cb := range batch {
		o, err := s.store.ApplyCallbacks(ctx, batch[i:i+1])
		var fe *persistence.FieldError
		switch {
		case errors.As(err, &fe):
			s.log.Error("status callback refused by the store; dropped", "target", cb.Target, "webhook_id", cb.WebhookID, "error", err)
			s.unapplied(cb, "the gateway refused it: "+fe.Error())
		case err != nil:
			return nil, err
		default:
			outs[i] = o[0]
		}
	}
	return outs, nil
}

// unapplied raises the alert of a verified callback that changed nothing, one a day at
// most per target and webhook-id (the notifier's cooldown works on the dedupe key).
func (s *Spool) unapplied(cb persistence.StatusCallback, why string) {
	if s.Alerts == nil {
		return
	}
	ref := cb.ExternalRef
	switch {
	case cb.DeliveryID != 0:
		ref = fmt.Sprintf("delivery %d", cb.DeliveryID)
	case cb.MessageID != 0:
		ref = fmt.Sprintf("message %d", cb.MessageID)
	}
	target := string(cb.Target)
	s.Alerts.Raise(alert.Alert{
		Severity: alert.StatusCallbackUnapplied.Info().Severity, Code: alert.StatusCallbackUnapplied,
		Subject: alert.Subject{Kind: "plugin", ID: target, Name: target},
		Summary: fmt.Sprintf("A status callback to %s was not applied: %s", target, why),
		Details: []alert.Detail{{Label: "Webhook id", Value: cb.WebhookID}, {Label: "Names", Value: ref},
			{Label: "Status", Value: cb.Status}},
		DedupeKey: "status_callback_unapplied:" + target + ":" + cb.WebhookID,
		Link:      "/ui/plugins",
	})
}

// trim drops the first n callbacks from the journal: the whole file is emptied when
// nothing else is pending, else what remains is written to a new file that replaces it.
func (s *Spool) trim(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = s.pending[n:]
	if len(s.pending) == 0 {
		s.pending = nil
		if err := s.f.Truncate(0); err != nil {
			return fmt.Errorf("trim status callback journal: %w", err)
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("trim status callback journal: %w", err)
		}
		return nil
	}
	var buf []byte
	for _, cb := range s.pending {
		line, err := encodeLine(cb)
		if err != nil {
			return fmt.Errorf("trim status callback journal: %w", err)
		}
		buf = append(buf, line...)
	}
	path := filepath.Join(s.dir, JournalName)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, buf, 0o600); err != nil {
		return fmt.Errorf("trim status callback journal: %w", err)
	}
	if err := durable.SyncFile(tmp); err != nil {
		return fmt.Errorf("trim status callback journal: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("trim status callback journal: %w", err)
	}
	if err := durable.SyncDir(s.dir); err != nil {
		return fmt.Errorf("trim status callback journal: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("reopen status callback journal: %w", err)
	}
	s.f.Close()
	s.f = f
	return nil
}

// Pending counts the callbacks accepted and not yet applied.
func (s *Spool) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// Stop refuses new appends, applies what the journal holds while ctx allows (what is
// left is applied at the next start), and closes the journal.
func (s *Spool) Stop(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		close(s.quit)
		s.wg.Wait()
		for ctx.Err() == nil {
			n, aerr := s.applyOnce(ctx)
			if aerr != nil {
				s.log.Warn("status callbacks left in the journal for the next start", "error", aerr)
				break
			}
			if n == 0 {
				break
			}
		}
		s.mu.Lock()
		err = s.f.Close()
		s.mu.Unlock()
	})
	return err
}
