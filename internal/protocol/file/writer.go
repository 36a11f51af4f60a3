package file

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"wharf/internal/delivery"
	"wharf/internal/durable"
	"wharf/internal/persistence"
	"wharf/internal/storage"
)

// tempPrefix starts the names of files the writer has not finished; the poller and most
// tools skip dot files.
const tempPrefix = ".wharf-tmp-"

// Writer is a running file-writer instance.
type Writer struct {
	dir       string
	pattern   namePattern
	collision Collision
	fileMode  fs.FileMode
	dirMode   fs.FileMode
	log       *slog.Logger
	dirSync   groupSync
	fsSync    groupSync // flushes the whole file system with syncFS
}

// NewWriter builds a writer from a validated config.
func NewWriter(cfg *WriterConfig, logger *slog.Logger) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("file-writer: %w", err)
	}
	pat, _ := parseNamePattern(cfg.Pattern)
	collision, _ := ParseCollision(cfg.OnCollision)
	fileMode, _ := parseMode(cfg.FileMode)
	dirMode, _ := parseMode(cfg.DirMode)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Writer{
		dir:       filepath.Clean(cfg.Directory),
		pattern:   pat,
		collision: collision,
		fileMode:  fileMode,
		dirMode:   dirMode,
		log:       logger.With("plugin", string(persistence.PluginFileWriter)),
		fsSync:    groupSync{op: durable.SyncFS},
	}, nil
}

// Deliver writes the message's document under the directory, under the rendered name or,
// when that is taken by other bytes and the policy is suffix, the first free alternative;
// the history records the name written.
func (w *Writer) Deliver(ctx context.Context, a delivery.Attempt) delivery.Result {
	segs := w.pattern.render(&a.Message)
	final := filepath.Join(append([]string{w.dir}, segs...)...)
	if !within(w.dir, final) {
		return delivery.Permanent(delivery.ClassInternal, errors.New("the rendered path leaves the directory"))
	}
	dir, res, ok := w.makeDirs(segs[:len(segs)-1])
	if !ok {
		return res
	}
	relDir := path.Join(segs[:len(segs)-1]...)
	tmp, res, ok := w.writeTemp(ctx, a, dir, path.Join(segs...))
	if !ok {
		return res
	}
	defer os.Remove(tmp) // the name it was linked from, or a file never placed

	name := segs[len(segs)-1]
	for n := 0; n <= maxSuffix; n++ {
		cand := name
		if n > 0 {
			cand = suffixed(name, n)
		}
		rel := path.Join(relDir, cand)
		placed, res, done := w.place(ctx, a, tmp, filepath.Join(dir, cand), rel)
		if done {
			return res
		}
		if placed {
			return w.synced(dir, rel, ownSync(a.Message.Size))
		}
		if w.collision == CollisionFail {
			return delivery.Transient(delivery.ClassTransport, fmt.Errorf("file exists: %s", rel))
		}
	}
	return delivery.Transient(delivery.ClassTransport, fmt.Errorf("file exists: %s and its %d suffixed names", path.Join(relDir, name), maxSuffix))
}

// place puts the temporary file at final without ever replacing another file, unless the
// policy is overwrite. It reports placed when the file is there now, done with a result
// when the attempt ends here (identical bytes already in place, a failure), and neither
// when final is taken by something else.
func (w *Writer) place(ctx context.Context, a delivery.Attempt, tmp, final, rel string) (placed bool, res delivery.Result, done bool) {
	if w.collision == CollisionOverwrite {
		if info, err := os.Lstat(final); err == nil && info.IsDir() {
			return false, delivery.Transient(delivery.ClassTransport, fmt.Errorf("file exists: %s is a directory", rel)), true
		}
		if err := os.Rename(tmp, final); err != nil {
			return false, fsFailure("rename into", rel, err), true
		}
		return true, delivery.Result{}, false
	}
	// A hard link never replaces a file: of two attempts racing for one name, one wins and
	// the other sees the name taken.
	err := os.Link(tmp, final)
	if err == nil {
		return true, delivery.Result{}, false
	}
	if !errors.Is(err, fs.ErrExist) {
		// No hard links on this file system: check, then rename.
		taken, lerr := exists(final)
		if lerr != nil {
			return false, fsFailure("inspect", rel, lerr), true
		}
		if !taken {
			if err := os.Rename(tmp, final); err != nil {
				return false, fsFailure("rename into", rel, err), true
			}
			return true, delivery.Result{}, false
		}
	}
	same, res := w.sameBytes(ctx, a, final, rel)
	switch {
	case res.Kind != "":
		return false, res, true
	case same:
		return false, delivery.DeliveredNote("found already written as " + rel), true
	}
	return false, delivery.Result{}, false
}

// ownSync tells whether a document of size bytes is made durable by syncing its own file
// and directory rather than by the file-system flush small files share: the flush would
// also write whatever else is pending on the file system (spool files, cached copies),
// which a large file's delivery need not wait for.
func ownSync(size int64) bool { return size >= pipelinedFrom }

// synced makes a placed file's bytes and name durable and reports it delivered: its own
// directory when own (its bytes were synced before the rename), else one file-system
// flush shared by the deliveries that finish together.
func (w *Writer) synced(dir, rel string, own bool) delivery.Result {
	if durable.CanSyncFS && !own {
		// One file-system flush, shared by the deliveries that finish together, makes
		// the file's bytes and its name durable.
		if err := w.fsSync.Sync(w.dir); err != nil {
			return fsFailure("sync", rel, err)
		}
	} else if err := w.dirSync.Sync(dir); err != nil {
		return fsFailure("sync directory of", rel, err)
	}
	return delivery.DeliveredNote("written as " + rel)
}

// within reports whether p is below base.
func within(base, p string) bool {
	r, err := filepath.Rel(base, p)
	return err == nil && r != "." && filepath.IsLocal(r)
}

// makeDirs creates the directories of a path one by one below the base, refusing any
// that is a symbolic link or not a directory. It returns the last one.
func (w *Writer) makeDirs(segs []string) (string, delivery.Result, bool) {
	if err := os.MkdirAll(w.dir, w.dirMode); err != nil {
		return "", fsFailure("create", "the directory", err), false
	}
	dir := w.dir
	for i, seg := range segs {
		parent := dir
		dir = filepath.Join(dir, seg)
		rel := path.Join(segs[:i+1]...)
		info, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			err = os.Mkdir(dir, w.dirMode)
			if err == nil {
				if err := os.Chmod(dir, w.dirMode); err != nil {
					return "", fsFailure("set mode of", rel, err), false
				}
				if err := durable.SyncDir(parent); err != nil {
					return "", fsFailure("sync directory of", rel, err), false
				}
				continue
			}
			if !errors.Is(err, fs.ErrExist) {
				return "", fsFailure("create", rel, err), false
			}
			info, err = os.Lstat(dir) // made by a concurrent attempt
		}
		if err != nil {
			return "", fsFailure("inspect", rel, err), false
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			return "", delivery.Transient(delivery.ClassTransport, fmt.Errorf("%s is a symbolic link", rel)), false
		case !info.IsDir():
			return "", delivery.Transient(delivery.ClassTransport, fmt.Errorf("%s is not a directory", rel)), false
		}
	}
	return dir, delivery.Result{}, true
}

// writeTemp writes the document to a temporary file in dir and returns its path; the file
// is synced here unless Deliver flushes the file system after the rename.
func (w *Writer) writeTemp(ctx context.Context, a delivery.Attempt, dir, rel string) (string, delivery.Result, bool) {
	body, err := a.Open(ctx)
	if err != nil {
		w.log.WarnContext(ctx, "cannot open a payload", "error", err)
		return "", delivery.Transient(delivery.ClassInternal, errors.New("cannot read the payload")), false
	}
	defer body.Close()
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return "", fsFailure("create a temporary file for", rel, err), false
	}
	name := f.Name()
	fail := func(r delivery.Result) (string, delivery.Result, bool) {
		f.Close()
		os.Remove(name)
		return "", r, false
	}
	// A document that checks itself against the message's digest as it is read (one on
	// S3) is not digested twice: its read fails at the end when the bytes differ.
	digested := true
	if c, ok := body.(storage.Checking); ok && a.Message.SHA256 != "" && strings.EqualFold(c.ChecksSHA256(), a.Message.SHA256) {
		digested = false
	}
	n, sum, err := copyDocument(f, &attemptReader{ctx: ctx, r: body}, a.Message.Size, digested)
	if err != nil {
		var re *readError
		if errors.As(err, &re) {
			if ctx.Err() != nil {
				return fail(delivery.Transient(delivery.ClassTransport, errors.New("interrupted")))
			}
			w.log.WarnContext(ctx, "cannot read a payload", "error", re.err)
			return fail(delivery.Transient(delivery.ClassInternal, errors.New("cannot read the payload")))
		}
		return fail(fsFailure("write", rel, err))
	}
	if a.Message.Size > 0 && n != a.Message.Size {
		return fail(delivery.Transient(delivery.ClassInternal, fmt.Errorf("payload is %d bytes, the message says %d", n, a.Message.Size)))
	}
	if want := a.Message.SHA256; sum != nil && want != "" && !strings.EqualFold(hex.EncodeToString(sum), want) {
		return fail(delivery.Transient(delivery.ClassInternal, errors.New("payload does not match the message's SHA-256")))
	}
	if err := f.Chmod(w.fileMode); err != nil {
		return fail(fsFailure("set mode of", rel, err))
	}
	if !durable.CanSyncFS || ownSync(a.Message.Size) {
		if err := f.Sync(); err != nil {
			return fail(fsFailure("sync", rel, err))
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", fsFailure("write", rel, err), false
	}
	return name, delivery.Result{}, true
}

// sameBytes reports whether the file at final holds the document: then an earlier
// attempt wrote it. A result with a Kind is a failure to find out.
func (w *Writer) sameBytes(ctx context.Context, a delivery.Attempt, final, rel string) (bool, delivery.Result) {
	info, err := os.Lstat(final)
	if err != nil {
		return false, fsFailure("inspect", rel, err)
	}
	if !info.Mode().IsRegular() || (a.Message.Size > 0 && info.Size() != a.Message.Size) {
		return false, delivery.Result{}
	}
	f, err := os.Open(final)
	if err != nil {
		return false, fsFailure("read", rel, err)
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(info, opened) {
		return false, delivery.Result{}
	}
	got, err := digestOf(sha256.New(), f)
	if err != nil {
		return false, fsFailure("read", rel, err)
	}
	want := a.Message.SHA256
	if want == "" {
		body, err := a.Open(ctx)
		if err != nil {
			w.log.WarnContext(ctx, "cannot open a payload", "error", err)
			return false, delivery.Transient(delivery.ClassInternal, errors.New("cannot read the payload"))
		}
		defer body.Close()
		if want, err = digestOf(sha256.New(), &attemptReader{ctx: ctx, r: body}); err != nil {
			return false, delivery.Transient(delivery.ClassInternal, errors.New("cannot read the payload"))
		}
	}
	return strings.EqualFold(got, want), delivery.Result{}
}

func digestOf(h hash.Hash, r io.Reader) (string, error) {
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// attemptReader stops a copy when the attempt's context ends and marks read errors, so
// they are told apart from write errors.
type attemptReader struct {
	ctx context.Context
	r   io.Reader
}

type readError struct{ err error }

func (e *readError) Error() string { return "read payload: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

func (r *attemptReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, &readError{err}
	}
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, &readError{err}
	}
	return n, err
}

// fsFailure classifies a file-system error: a name the file system refuses cannot be
// fixed by retrying; anything else (no space, I/O error, permissions) may pass, so the
// retry policy's transport rule decides.
func fsFailure(op, rel string, err error) delivery.Result {
	reason := fmt.Errorf("%s %s: %s", op, rel, errText(err))
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENAMETOOLONG, syscall.EINVAL, syscall.EISDIR, syscall.ENOTDIR:
			return delivery.Permanent(delivery.ClassTransport, reason)
		}
	}
	return delivery.Transient(delivery.ClassTransport, reason)
}
