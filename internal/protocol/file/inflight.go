package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"wharf/internal/durable"
	"wharf/internal/logging"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// Lookup is implemented by an ingester that can tell whether a source already stored a
// message with a given origin event id. The poller uses it to finish files a crash or an
// ambiguous failure left in its journal without ingesting them twice.
type Lookup interface {
	MessageExists(ctx context.Context, source persistence.InstanceName, originEventID string) (bool, error)
}

// originEventPrefix starts the origin event id of a file whose sidecar gives none.
const originEventPrefix = "wharf-file-"

const journalSuffix = ".batch.json"

// lookupTimeout bounds the lookups after a failed batch, which run even when the scan's
// context has ended (at Stop).
const lookupTimeout = 10 * time.Second

// journal lists the files of one claimed batch; it is written before they move.
type journal struct {
	Batch string  `json:"batch"`
	Items []*item `json:"items"`
}

// item is one claimed document.
type item struct {
	// ID is the name of the file in the inflight directory.
	ID string `json:"id"`
	// Path is where the file was, relative to the directory, with "/" separators.
	Path          string `json:"path"`
	From          string `json:"from"`
	To            string `json:"to"`
	FileName      string `json:"file_name"`
	CorrelationID string `json:"correlation_id,omitempty"`
	OriginEventID string `json:"origin_event_id"`
	Sidecar       bool   `json:"sidecar,omitempty"`
	// Metadata is the sidecar's, journaled with the claim so a recovery hands it over too.
	Metadata map[string]string `json:"metadata,omitempty"`

	info    fs.FileInfo // the claimed file, to check it is the one opened
	journal *journal
}

func (p *Poller) inflightPath(id string) string { return filepath.Join(p.inflightDir, id) }

func (p *Poller) journalPath(batch string) string {
	return filepath.Join(p.inflightDir, batch+journalSuffix)
}

func (p *Poller) originalPath(it *item) string {
	return filepath.Join(p.dir, filepath.FromSlash(it.Path))
}

// takeBatch journals, claims and ingests a batch of files.
func (p *Poller) takeBatch(ctx context.Context, items []*item) (int, error) {
	claimed, err := p.claim(items)
	if err != nil {
		return 0, err
	}
	if len(claimed) == 0 {
		return 0, nil
	}
	return p.ingestClaimed(ctx, claimed)
}

// claim writes the journal of a batch, then moves its files into the inflight directory.
// It returns the items it moved; a file that vanished meanwhile is left out.
func (p *Poller) claim(items []*item) ([]*item, error) {
	j := &journal{Batch: uniqueToken(), Items: items}
	for i, it := range items {
		it.ID = fmt.Sprintf("%s-%d", j.Batch, i+1)
		if it.OriginEventID == "" {
			it.OriginEventID = originEventPrefix + it.ID
		}
		it.journal = j
	}
	data, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("journal batch: %w", err)
	}
	if err := writeFileSync(p.journalPath(j.Batch), data, 0o600); err != nil {
		os.Remove(p.journalPath(j.Batch))
		return nil, fmt.Errorf("journal batch: %s", errText(err))
	}
	if err := durable.SyncDir(p.inflightDir); err != nil {
		os.Remove(p.journalPath(j.Batch))
		return nil, fmt.Errorf("journal batch: %s", errText(err))
	}
	var claimed []*item
	for _, it := range items {
		src, dst := p.originalPath(it), p.inflightPath(it.ID)
		if err := os.Rename(src, dst); err != nil {
			p.log.Warn("cannot claim a file", "path", it.Path, "error", errText(err))
			continue
		}
		info, err := os.Lstat(dst)
		if err != nil || !info.Mode().IsRegular() {
			// Replaced by something else between the walk and the rename.
			p.putAside(dst, "", it.Path, "not a regular file")
			continue
		}
		it.info = info
		if it.Sidecar {
			if err := os.Rename(src+sidecarSuffix, dst+sidecarSuffix); err != nil {
				p.log.Warn("cannot claim a sidecar", "path", it.Path+sidecarSuffix, "error", errText(err))
			}
		}
		claimed = append(claimed, it)
	}
	if err := durable.SyncDir(p.inflightDir); err != nil {
		p.log.Warn("cannot sync the inflight directory", "error", errText(err))
	}
	if len(claimed) == 0 {
		p.closeJournal(j)
	}
	return claimed, nil
}

// ingestClaimed hands claimed files to the core in one call and finishes each by its
// result.
func (p *Poller) ingestClaimed(ctx context.Context, items []*item) (int, error) {
	in := make([]module.Incoming, len(items))
	bodies := make([]*claimedBody, len(items))
	for i, it := range items {
		bodies[i] = &claimedBody{path: p.inflightPath(it.ID), want: it.info}
		var body io.Reader = bodies[i]
		if p.processedDir == "" {
			body = linkableBody{bodies[i]}
		}
		in[i] = module.Incoming{
			Source:        p.name,
			From:          persistence.PartyName(it.From),
			To:            persistence.PartyName(it.To),
			FileName:      persistence.FileName(it.FileName),
			Body:          body,
			CorrelationID: it.CorrelationID,
			OriginEventID: it.OriginEventID,
			Metadata:      it.Metadata,
			Actor:         string(p.name),
		}
	}
	results, err := p.ingest.Ingest(ctx, in)
	for _, b := range bodies {
		b.Close()
	}
	if err != nil {
		p.log.Error("ingest failed for a batch; its files are taken again later", "files", len(items), "error", err)
		p.resolveFailed(ctx, items)
		p.closeJournals(items)
		return 0, fmt.Errorf("ingest a batch of %d files: %w", len(items), err)
	}
	if len(results) != len(items) {
		// Which items were stored is unknown: reconciliation asks the core.
		return 0, fmt.Errorf("ingest a batch of %d files: %d results", len(items), len(results))
	}
	stored := 0
	for i, r := range results {
		it := items[i]
		if r.Err == nil {
			stored++
			p.log.DebugContext(logging.WithMessage(ctx, r.Message.ID, r.Message.CorrelationID), "file stored", "path", it.Path)
			p.finishStored(it)
			continue
		}
		p.known[it.ID] = false
		reason := r.Err.Error()
		if errors.Is(r.Err, module.ErrUnknownParty) && !strings.Contains(reason, it.From) && !strings.Contains(reason, it.To) {
			reason = fmt.Sprintf("%s (from %s, to %s)", reason, it.From, it.To)
		}
		if p.putAside(p.inflightPath(it.ID), p.inflightPath(it.ID)+sidecarSuffix, it.Path, reason) {
			delete(p.known, it.ID)
		}
	}
	p.closeJournals(items)
	return stored, nil
}

// resolveFailed settles the items of a batch whose Ingest call failed: those the core
// has after all are finished, the others go back to their place in the outbox. Items the
// core cannot answer for stay journaled for the next reconciliation.
func (p *Poller) resolveFailed(ctx context.Context, items []*item) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	for _, it := range items {
		if p.lookup != nil {
			ok, err := p.lookup.MessageExists(lctx, p.name, it.OriginEventID)
			if err != nil {
				p.log.Warn("cannot look up a file of a failed batch; it stays journaled", "path", it.Path, "error", err)
				continue
			}
			if ok {
				p.finishStored(it)
				continue
			}
		}
		p.release(it)
	}
}

// release moves a claimed file (sidecar first) back to its place in the outbox.
func (p *Poller) release(it *item) {
	src, dst := p.inflightPath(it.ID), p.originalPath(it)
	p.known[it.ID] = false
	if taken, err := exists(dst); err != nil || taken {
		p.log.Warn("cannot put a file back, its name is taken; it is ingested on the next scan", "path", it.Path)
		return
	}
	if it.Sidecar {
		if err := os.Rename(src+sidecarSuffix, dst+sidecarSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			p.log.Warn("cannot put a sidecar back", "path", it.Path+sidecarSuffix, "error", errText(err))
		}
	}
	if err := os.Rename(src, dst); err != nil {
		p.log.Warn("cannot put a file back; it is ingested on the next scan", "path", it.Path, "error", errText(err))
		return
	}
	delete(p.known, it.ID)
}

// finishStored deletes a stored file and its sidecar, or moves them to the processed
// directory. When that fails, the file stays journaled as stored and the next scan tries
// again.
func (p *Poller) finishStored(it *item) {
	p.known[it.ID] = true
	src := p.inflightPath(it.ID)
	side := src + sidecarSuffix
	var err error
	if p.processedDir == "" {
		if err = os.Remove(side); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		if err == nil {
			err = os.Remove(src)
		}
	} else {
		var dst string
		if dst, err = freeName(filepath.Join(p.processedDir, filepath.FromSlash(it.Path))); err == nil {
			if err = moveFile(side, dst+sidecarSuffix); errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		}
		if err == nil {
			err = moveFile(src, dst)
		}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.log.Error("cannot clean up a stored file; retrying on the next scan", "path", it.Path, "error", errText(err))
		return
	}
	delete(p.known, it.ID)
}

// closeJournals removes the journals of items that have no file left inflight.
func (p *Poller) closeJournals(items []*item) {
	seen := map[*journal]bool{}
	for _, it := range items {
		if j := it.journal; j != nil && !seen[j] {
			seen[j] = true
			p.closeJournal(j)
		}
	}
}

func (p *Poller) closeJournal(j *journal) {
	for _, it := range j.Items {
		if present, err := exists(p.inflightPath(it.ID)); err != nil || present {
			return
		}
	}
	for _, it := range j.Items {
		os.Remove(p.inflightPath(it.ID) + sidecarSuffix)
	}
	if err := os.Remove(p.journalPath(j.Batch)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.log.Warn("cannot remove a finished journal", "batch", j.Batch, "error", errText(err))
		return
	}
	if err := durable.SyncDir(p.inflightDir); err != nil {
		p.log.Warn("cannot sync the inflight directory", "error", errText(err))
	}
}

// reconcile finishes what the journal holds: files the core already stored are cleaned
// up, the others are ingested again. It returns how many it stored; an error means some
// files could not be settled, and the scan takes nothing new.
func (p *Poller) reconcile(ctx context.Context) (int, error) {
	entries, err := os.ReadDir(p.inflightDir)
	if err != nil {
		return 0, fmt.Errorf("read the inflight directory: %s", errText(err))
	}
	if len(entries) == 0 {
		return 0, nil
	}
	referenced := map[string]bool{}
	var journals []*journal
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, journalSuffix) || !e.Type().IsRegular() {
			continue
		}
		referenced[name] = true
		j, err := p.readJournal(name)
		if err != nil {
			// A journal is complete and synced before any file moves, so a torn one
			// names nothing that moved.
			p.log.Warn("removing an unreadable journal", "file", name, "error", err)
			os.Remove(filepath.Join(p.inflightDir, name))
			continue
		}
		for _, it := range j.Items {
			it.journal = j
			referenced[it.ID] = true
			referenced[it.ID+sidecarSuffix] = true
		}
		journals = append(journals, j)
	}
	for _, e := range entries {
		name := e.Name()
		if referenced[name] {
			continue
		}
		if !e.Type().IsRegular() {
			p.log.Warn("unexpected entry in the inflight directory", "name", name)
			continue
		}
		p.putAside(filepath.Join(p.inflightDir, name), "", inflightDirName+"/"+name, "found in the in-flight directory without a journal entry")
	}

	var pending []*item
	var lastErr error
	for _, j := range journals {
		open := 0
		for _, it := range j.Items {
			info, err := os.Lstat(p.inflightPath(it.ID))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			open++
			if err != nil {
				lastErr = err
				continue
			}
			it.info = info
			if it.Sidecar {
				p.recoverSidecar(it)
			}
			pending = append(pending, it)
		}
		if open == 0 {
			p.closeJournal(j)
		}
	}

	var again []*item
	for _, it := range pending {
		if stored, ok := p.known[it.ID]; ok {
			if stored {
				p.finishStored(it)
			} else {
				again = append(again, it)
			}
			continue
		}
		if p.lookup == nil {
			again = append(again, it)
			continue
		}
		stored, err := p.lookup.MessageExists(ctx, p.name, it.OriginEventID)
		switch {
		case err != nil:
			lastErr = err
		case stored:
			p.log.Info("finishing a file the core already stored", "path", it.Path, "origin_event_id", it.OriginEventID)
			p.finishStored(it)
		default:
			again = append(again, it)
		}
	}
	stored := 0
	for len(again) > 0 && lastErr == nil {
		n := min(len(again), p.batchSize)
		got, err := p.ingestClaimed(ctx, again[:n])
		stored += got
		if err != nil {
			lastErr = err
		}
		again = again[n:]
	}
	p.closeJournals(pending)
	if lastErr != nil {
		return stored, fmt.Errorf("reconcile in-flight files: %w", lastErr)
	}
	return stored, nil
}

func (p *Poller) readJournal(name string) (*journal, error) {
	data, err := os.ReadFile(filepath.Join(p.inflightDir, name))
	if err != nil {
		return nil, errors.New(errText(err))
	}
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, err
	}
	if j.Batch+journalSuffix != name {
		return nil, fmt.Errorf("names batch %q", j.Batch)
	}
	for _, it := range j.Items {
		if it == nil || !strings.HasPrefix(it.ID, j.Batch+"-") || strings.ContainsAny(it.ID, `/\`) || it.OriginEventID == "" {
			return nil, errors.New("malformed item")
		}
		if _, err := persistence.ParsePartyName(it.From); err != nil {
			return nil, err
		}
		if _, err := persistence.ParsePartyName(it.To); err != nil {
			return nil, err
		}
		if _, err := persistence.ParseFileName(it.FileName); err != nil {
			return nil, err
		}
		if !filepath.IsLocal(filepath.FromSlash(it.Path)) {
			return nil, fmt.Errorf("item path %q is not local", it.Path)
		}
	}
	return &j, nil
}

// recoverSidecar pulls a sidecar a crash left in the outbox into the inflight directory.
func (p *Poller) recoverSidecar(it *item) {
	dst := p.inflightPath(it.ID) + sidecarSuffix
	if ok, _ := exists(dst); ok {
		return
	}
	src := p.originalPath(it) + sidecarSuffix
	if err := os.Rename(src, dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.log.Warn("cannot recover a sidecar", "path", it.Path+sidecarSuffix, "error", errText(err))
	}
}

// claimedBody reads a claimed file lazily, so a batch holds at most one file open while
// the core reads the bodies in turn, and refuses a file that is not the one claimed.
type claimedBody struct {
	path string
	want fs.FileInfo
	f    *os.File
	done bool
}

func (b *claimedBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if b.f == nil {
		f, err := b.open()
		if err != nil {
			return 0, err
		}
		b.f = f
	}
	n, err := b.f.Read(p)
	if errors.Is(err, io.EOF) {
		b.Close()
		b.done = true
	}
	return n, err
}

// open opens the claimed file, checked to be the one claimed.
func (b *claimedBody) open() (*os.File, error) {
	f, err := os.Open(b.path)
	if err != nil {
		return nil, fmt.Errorf("open claimed file: %s", errText(err))
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || (b.want != nil && !os.SameFile(info, b.want)) {
		f.Close()
		return nil, errors.New("claimed file was replaced")
	}
	return f, nil
}

// linkableBody is a claimed file the payload store may take by a hard link
// (storage.FileBody) rather than copy: the poller deletes a stored file, never changes
// it. With a processed directory the file lives on there, open to changes by others, so
// it is copied.
type linkableBody struct{ *claimedBody }

func (b linkableBody) OpenFile() (*os.File, error) { return b.open() }

func (b *claimedBody) Close() error {
	if b.f == nil {
		return nil
	}
	err := b.f.Close()
	b.f = nil
	return err
}
