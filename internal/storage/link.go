package storage

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"wharf/internal/durable"
)

// A FileBody is a body that is a whole regular file of its own, such as a document a
// poller has claimed. Put may take such a file into the store by giving it a second name
// (a hard link) instead of copying its bytes: when it is on the store's file system, has
// no other name and belongs to this process's user. Put then reads it once for its digest
// and makes it private (mode 0600). The caller gives the file up to the store: it must
// not change it afterwards, though it may remove its own name for it. Anything else is
// copied as from any reader.
type FileBody interface {
	io.Reader
	// OpenFile opens the file for reading, as a handle of its own that the store closes.
	OpenFile() (*os.File, error)
}

// A DigestedFileBody is a FileBody whose writer computed its SHA-256 (hex) while it
// wrote it, such as a request body spooled as it arrived: Put links it without reading
// it again.
type DigestedFileBody interface {
	FileBody
	SHA256() string
}

// putLinked stores a FileBody by linking it. ok is false, with nothing stored, when the
// file cannot be linked and must be copied instead.
func (l *Local) putLinked(ctx context.Context, key string, body FileBody, max int64, cfg putConfig) (blob Blob, ok bool, err error) {
	f, err := body.OpenFile()
	if err != nil {
		return Blob{}, false, nil
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || !l.linkable(info) {
		return Blob{}, false, nil
	}
	if max >= 0 && info.Size() > max {
		return Blob{}, true, fmt.Errorf("put payload %s: more than %d bytes: %w", key, max, ErrTooLarge)
	}
	if err := f.Chmod(0o600); err != nil {
		return Blob{}, false, nil
	}
	n, sum, err := linkedDigest(ctx, f, body)
	if err != nil {
		return Blob{}, true, fmt.Errorf("put payload %s: %w", key, err)
	}
	if n != info.Size() || (max >= 0 && n > max) {
		// The file changed while it was read: it is not given up as promised.
		return Blob{}, true, fmt.Errorf("put payload %s: the file changed while it was stored", key)
	}
	if !cfg.deferSync {
		if err := f.Sync(); err != nil {
			return Blob{}, true, fmt.Errorf("put payload %s: sync: %w", key, err)
		}
	}
	final := filepath.Join(l.root, filepath.FromSlash(key))
	err = os.Link(f.Name(), final)
	if errors.Is(err, fs.ErrExist) && !cfg.noReplace {
		// Replacing a blob: link under a temporary name, then rename over it.
		tmp := filepath.Join(l.tmp, filepath.Base(final)+".link."+rand.Text())
		if err = os.Link(f.Name(), tmp); err == nil {
			if err = os.Rename(tmp, final); err != nil {
				os.Remove(tmp)
			}
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Blob{}, true, fmt.Errorf("put payload %s: %w", key, err)
		}
		// EXDEV and the like: the file is copied after all.
		return Blob{}, false, nil
	}
	if !cfg.deferDirSync {
		if err := durable.SyncDir(filepath.Dir(final)); err != nil {
			return Blob{}, true, fmt.Errorf("put payload %s: %w", key, err)
		}
	}
	return Blob{Key: key, Size: n, SHA256: sum}, true, nil
}

// linkedDigest is the size and SHA-256 of a file to be linked: the digest its writer
// computed, else read from the file.
func linkedDigest(ctx context.Context, f *os.File, body FileBody) (int64, string, error) {
	if d, ok := body.(DigestedFileBody); ok {
		info, err := f.Stat()
		if err != nil {
			return 0, "", err
		}
		return info.Size(), d.SHA256(), nil
	}
	h := sha256.New()
	bufp := bufPool.Get().(*[]byte)
	n, err := io.CopyBuffer(h, ctxReader{ctx, f}, *bufp)
	bufPool.Put(bufp)
	if err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
