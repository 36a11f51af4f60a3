// Package storage keeps payload blobs — the stages of a message (persistence.PayloadStage)
// — as files under <data-dir>/payloads.
//
// # Layout
//
// A blob's key is its path relative to the root, with forward slashes:
//
//	<id/1e6>/<id/1e3 % 1000, three digits>/<id>.<stage>      e.g. 1/234/1234567.unpacked
//
// so a directory holds at most a thousand messages' blobs. The stages of consecutive
// messages share a directory on purpose: a poller that stores a batch pays one directory
// sync for the batch rather than one per message. Temporary files live in <root>/.tmp
// until they are renamed into place.
//
// # Durability
//
// When Put returns a Blob, the bytes and the name are on stable storage: the data is
// written to a temporary file and synced, renamed to its key (replacing any blob there
// atomically), and the directory holding the key is synced. A directory created for the
// key has its own entry synced in its parent before the blob goes in. A FileBody (a file
// its owner gives up, such as a poller's claimed document) is linked to its key instead
// of copied when it can be, and synced in place.
//
// With the DeferDirSync option, Put still syncs the data but skips the directory sync; the
// name may be lost by a power cut until SyncDirs returns for that key. A caller using it
// must call SyncDirs before it records the key in the database or acknowledges the
// message. Blobs are written before the rows that name them, so a crash between the two
// leaves at worst an unreferenced file, never a row naming missing bytes.
//
// Delete and DeleteMessage do not sync: a deletion that a power cut undoes leaves an
// unreferenced blob, which is harmless. Callers that must know a deletion is durable (an
// erasure) follow it with SyncDirs.
package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"wharf/internal/durable"
	"wharf/internal/persistence"
)

var (
	// ErrNotFound means no blob is stored under the key.
	ErrNotFound = errors.New("payload not found")
	// ErrTooLarge means a payload exceeded the size limit it was stored with; nothing was
	// stored.
	ErrTooLarge = errors.New("payload too large")
	// ErrInvalidKey means a key is not a clean relative path inside the store.
	ErrInvalidKey = errors.New("invalid payload key")
)

// tmpDir holds files being written. It sits under the root so a rename into place never
// crosses a file system.
const tmpDir = ".tmp"

// staleTemp is how old a leftover temporary file must be before NewLocal removes it: far
// longer than any upload takes, so files another process is still writing are spared.
const staleTemp = 24 * time.Hour

// Blob describes a stored payload.
type Blob struct {
	Key    string
	Size   int64
	SHA256 string // lowercase hex
}

// PutOption adjusts one Put.
type PutOption func(*putConfig)

type putConfig struct {
	deferDirSync bool
	deferSync    bool
	noReplace    bool
}

// NoReplace refuses to replace a blob stored before under the same key: the Put fails
// with an error wrapping fs.ErrExist and the stored blob is left as it is.
func NoReplace() PutOption { return func(c *putConfig) { c.noReplace = true } }

// DeferDirSync skips the directory sync of a Put; the caller promises to call SyncDirs
// with the returned key before relying on the blob (see the package documentation).
func DeferDirSync() PutOption { return func(c *putConfig) { c.deferDirSync = true } }

// DeferSync skips every sync of a Put, the file's and its directory's; the caller promises
// to call Sync with the returned key before relying on the blob. A batch of such Puts
// then costs one flush of the file system rather than two syncs per blob.
func DeferSync() PutOption {
	return func(c *putConfig) { c.deferSync, c.deferDirSync = true, true }
}

// Local stores blobs on the local file system. It is safe for concurrent use, also by
// several processes sharing the root.
type Local struct {
	root string
	tmp  string

	// linkDev is the file system of the root, where FileBody files can be linked from;
	// nil where it cannot be told.
	linkDev *uint64

	mkMu sync.Mutex
	// ready holds directories (relative, slash-separated) known to exist with their own
	// entries synced; it saves a system call per Put and orders creation.
	ready sync.Map
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// NewLocal opens (creating if needed) a store rooted at root, which is normally
// <data-dir>/payloads. Temporary files older than a day, left by a crash, are removed.
func NewLocal(root string) (*Local, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("payload store %s: %w", root, err)
	}
	l := &Local{root: abs, tmp: filepath.Join(abs, tmpDir)}
	if err := os.MkdirAll(l.tmp, 0o700); err != nil {
		return nil, fmt.Errorf("payload store %s: %w", root, err)
	}
	// The root's own entry must be durable before any blob below it counts as stored.
	if err := durable.SyncDir(filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("payload store %s: %w", root, err)
	}
	if err := l.removeStaleTemp(time.Now().Add(-staleTemp)); err != nil {
		return nil, fmt.Errorf("payload store %s: %w", root, err)
	}
	if info, err := os.Stat(abs); err == nil {
		if dev, ok := fileSystemOf(info); ok {
			l.linkDev = &dev
		}
	}
	return l, nil
}

// Root is the absolute directory the store writes under.
func (l *Local) Root() string { return l.root }

// Key is where a message's stage is stored. It is a pure function of its arguments, so a
// blob can be found from the message id and stage alone.
func Key(messageID int64, stage persistence.PayloadStage) (string, error) {
	if messageID <= 0 {
		return "", fmt.Errorf("payload key: message id %d is not positive", messageID)
	}
	if _, err := persistence.ParsePayloadStage(string(stage)); err != nil {
		return "", fmt.Errorf("payload key for message %d: %w", messageID, err)
	}
	return messageDir(messageID) + "/" + strconv.FormatInt(messageID, 10) + "." + string(stage), nil
}

// KeyOf is Key: a local blob's key depends on nothing but its message and stage.
func (l *Local) KeyOf(messageID int64, stage persistence.PayloadStage) (string, error) {
	return Key(messageID, stage)
}

func messageDir(id int64) string {
	return fmt.Sprintf("%d/%03d", id/1_000_000, id/1_000%1_000)
}

// Put stores r as the given stage of a message, replacing what was stored there.
func (l *Local) Put(ctx context.Context, messageID int64, stage persistence.PayloadStage, r io.Reader, opts ...PutOption) (Blob, error) {
	return l.put(ctx, messageID, stage, r, -1, opts)
}

// PutLimited is Put refusing payloads over max bytes with ErrTooLarge; a refused payload
// leaves no file and does not touch what was stored before.
func (l *Local) PutLimited(ctx context.Context, messageID int64, stage persistence.PayloadStage, r io.Reader, max int64, opts ...PutOption) (Blob, error) {
	if max < 0 {
		return Blob{}, fmt.Errorf("put payload of message %d: negative size limit %d", messageID, max)
	}
	return l.put(ctx, messageID, stage, r, max, opts)
}

func (l *Local) put(ctx context.Context, messageID int64, stage persistence.PayloadStage, r io.Reader, max int64, opts []PutOption) (Blob, error) {
	var cfg putConfig
	for _, o := range opts {
		o(&cfg)
	}
	key, err := Key(messageID, stage)
	if err != nil {
		return Blob{}, err
	}
	if err := ctx.Err(); err != nil {
		return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
	}
	dir := messageDir(messageID)
	if err := l.ensureDir(dir); err != nil {
		return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
	}
	if fb, ok := r.(FileBody); ok {
		if b, linked, err := l.putLinked(ctx, key, fb, max, cfg); linked || err != nil {
			return b, err
		}
	}

	f, err := os.CreateTemp(l.tmp, strconv.FormatInt(messageID, 10)+"."+string(stage)+".*")
	if err != nil {
		return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
	}
	tmpName := f.Name()
	committed := false
	defer func() {
		if !committed {
			f.Close()
			os.Remove(tmpName)
		}
	}()

	h := sha256.New()
	src := io.Reader(ctxReader{ctx, r})
	if max >= 0 {
		src = io.LimitReader(src, max+1)
	}
	bufp := bufPool.Get().(*[]byte)
	// MultiWriter hides the file's ReadFrom, so the pooled buffer is what the copy uses.
	n, err := io.CopyBuffer(io.MultiWriter(f, h), src, *bufp)
	bufPool.Put(bufp)
	if err != nil {
		return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
	}
	if max >= 0 && n > max {
		return Blob{}, fmt.Errorf("put payload %s: more than %d bytes: %w", key, max, ErrTooLarge)
	}
	if !cfg.deferSync {
		if err := f.Sync(); err != nil {
			return Blob{}, fmt.Errorf("put payload %s: sync: %w", key, err)
		}
	}
	if err := f.Close(); err != nil {
		return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
	}
	final := filepath.Join(l.root, filepath.FromSlash(key))
	if cfg.noReplace {
		// A hard link fails when the name exists, where a rename would replace it.
		if err := os.Link(tmpName, final); err != nil {
			return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
		}
		os.Remove(tmpName)
	} else if err := os.Rename(tmpName, final); err != nil {
		return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
	}
	committed = true
	if !cfg.deferDirSync {
		if err := durable.SyncDir(filepath.Dir(final)); err != nil {
			return Blob{}, fmt.Errorf("put payload %s: %w", key, err)
		}
	}
	return Blob{Key: key, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Sync makes the bytes and names of the given keys durable: the second half of Puts made
// with DeferSync. Where the system has syncfs(2) it is one flush of the file system;
// elsewhere each file and each distinct directory is synced.
func (l *Local) Sync(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if durable.CanSyncFS {
		if err := durable.SyncFS(l.root); err != nil {
			return fmt.Errorf("sync payloads: %w", err)
		}
		return nil
	}
	for _, key := range keys {
		p, err := l.Path(key)
		if err != nil {
			return fmt.Errorf("sync payloads: %w", err)
		}
		if err := durable.SyncFile(p); err != nil {
			return fmt.Errorf("sync payload %s: %w", key, err)
		}
	}
	return l.SyncDirs(ctx, keys)
}

// SyncDirs makes the names of the given keys durable, syncing each distinct directory
// once. It is the second half of Puts made with DeferDirSync.
func (l *Local) SyncDirs(ctx context.Context, keys []string) error {
	seen := make(map[string]bool, 2)
	for _, key := range keys {
		p, err := l.Path(key)
		if err != nil {
			return fmt.Errorf("sync payload directories: %w", err)
		}
		dir := filepath.Dir(p)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("sync payload directories: %w", err)
		}
		if err := durable.SyncDir(dir); err != nil {
			return fmt.Errorf("sync payload directories: %w", err)
		}
	}
	return nil
}

// Open reads a stored blob.
func (l *Local) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := l.Path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open payload %s: %w", key, err)
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open payload %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open payload %s: %w", key, err)
	}
	return f, nil
}

// Path is the file a key names, for targets that hand a path to something else. It does
// not check that the file exists.
func (l *Local) Path(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(l.root, filepath.FromSlash(key)), nil
}

// Delete removes a blob; a missing blob is not an error.
func (l *Local) Delete(ctx context.Context, key string) error {
	p, err := l.Path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete payload %s: %w", key, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete payload %s: %w", key, err)
	}
	return nil
}

// DeleteMessage removes every stage stored for a message.
func (l *Local) DeleteMessage(ctx context.Context, messageID int64) error {
	for _, stage := range persistence.AllPayloadStages {
		key, err := Key(messageID, stage)
		if err != nil {
			return fmt.Errorf("delete payloads of message %d: %w", messageID, err)
		}
		if err := l.Delete(ctx, key); err != nil {
			return fmt.Errorf("delete payloads of message %d: %w", messageID, err)
		}
	}
	return nil
}

// checkKey refuses keys that are not clean, relative, slash-separated paths below the
// root, or that point into the temporary directory.
func checkKey(key string) error {
	switch {
	case key == "" || key == ".":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case strings.ContainsAny(key, "\\\x00:"):
		return fmt.Errorf("%w %q: backslash, colon or NUL", ErrInvalidKey, key)
	case path.IsAbs(key):
		return fmt.Errorf("%w %q: absolute", ErrInvalidKey, key)
	case path.Clean(key) != key:
		return fmt.Errorf("%w %q: not a clean path", ErrInvalidKey, key)
	case key == ".." || strings.HasPrefix(key, "../"):
		return fmt.Errorf("%w %q: leaves the store", ErrInvalidKey, key)
	case key == tmpDir || strings.HasPrefix(key, tmpDir+"/"):
		return fmt.Errorf("%w %q: temporary file", ErrInvalidKey, key)
	}
	return nil
}

// ensureDir creates a blob directory (two levels below the root) if needed and syncs the
// parents of whatever it created, so the directory itself survives a power cut before any
// blob is renamed into it. Directories found already there are synced too, once per
// process: another process may have created them and died before syncing.
func (l *Local) ensureDir(rel string) error {
	if _, ok := l.ready.Load(rel); ok {
		return nil
	}
	l.mkMu.Lock()
	defer l.mkMu.Unlock()
	if _, ok := l.ready.Load(rel); ok {
		return nil
	}
	parent := l.root
	for _, part := range strings.Split(rel, "/") {
		dir := filepath.Join(parent, part)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create directory: %w", err)
		}
		if err := durable.SyncDir(parent); err != nil {
			return err
		}
		parent = dir
	}
	l.ready.Store(rel, true)
	return nil
}

// removeStaleTemp deletes temporary files last modified before cutoff.
func (l *Local) removeStaleTemp(cutoff time.Time) error {
	if err := durable.RemoveStale(l.tmp, []string{"*"}, cutoff); err != nil {
		return fmt.Errorf("clean temporary files: %w", err)
	}
	return nil
}

// ctxReader stops a copy when its context ends, so a cancelled upload does not run on.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
