package storage

import (
	"container/list"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"wharf/internal/digest"
)

// blobCache keeps local copies of documents this process uploaded to S3 from a file of
// its own (a claimed poller file, a spooled AS2 document): the file gets a second name (a
// hard link, no bytes copied) in a directory of the process, and Open serves the blob from
// it instead of downloading what was just uploaded. It is bounded in bytes and age, the
// oldest going first; Delete drops a blob's copy; and the directory goes at the next start
// of any process sharing the data directory once its owner has ended (it is locked while
// the owner runs).
//
// A copy is served only while its file still has the size the upload had, and its reader
// checks the bytes against the digest the upload recorded, holding the last byte back
// until they match, as Verify does. A copy that does not match fails the read with an
// error that is not ErrCorrupt (the object in the bucket may be sound) and is dropped, so
// the next read downloads the object.
type blobCache struct {
	dir      string
	lock     *os.File // held while the process runs
	maxBytes int64
	maxAge   time.Duration
	now      func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element // by blob key, of *cacheEntry
	order   list.List                // oldest first
	total   int64
	seq     uint64
}

type cacheEntry struct {
	key    string
	path   string
	size   int64
	sha256 string
	added  time.Time
}

// errNoLocks says the system cannot lock a directory, which the cache needs.
var errNoLocks = errors.New("directories cannot be locked on this system")

// Default bounds of the S3 blob cache.
const (
	DefaultCacheBytes = 4 << 30
	DefaultCacheAge   = time.Hour
)

// maxCacheEntries bounds the copies kept, whatever their size, so small documents cost a
// bounded index.
const maxCacheEntries = 10000

// EnableCache makes s keep local copies of the documents it uploads from files, in a
// directory of its own below dir, which must be on the file system those files are on
// (the data directory's tmp). Directories left below dir by processes that ended are
// removed first. Where directories cannot be locked (errNoLocks: not a Unix system) it
// leaves the cache off, since a starting process could not tell a live process's copies
// from those of one that ended.
func (s *S3) EnableCache(dir string, maxBytes int64, maxAge time.Duration) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("S3 blob cache %s: %w", dir, err)
	}
	removeUnlockedCaches(dir)
	own, err := os.MkdirTemp(dir, "c")
	if err != nil {
		return fmt.Errorf("S3 blob cache %s: %w", dir, err)
	}
	lock, err := lockDir(own)
	if err != nil {
		os.RemoveAll(own)
		if errors.Is(err, errNoLocks) {
			return nil
		}
		return fmt.Errorf("S3 blob cache: %w", err)
	}
	s.cache = &blobCache{dir: own, lock: lock, maxBytes: maxBytes, maxAge: maxAge, now: time.Now, entries: map[string]*list.Element{}}
	return nil
}

// add links f's file, uploaded as key with the given size and digest, into the cache.
// It gives up quietly: a blob not cached is downloaded when read.
func (c *blobCache) add(key string, f *os.File, size int64, sha string) {
	if c == nil || size > c.maxBytes {
		return
	}
	c.mu.Lock()
	c.seq++
	path := filepath.Join(c.dir, strconv.FormatUint(c.seq, 10))
	c.mu.Unlock()
	if err := os.Link(f.Name(), path); err != nil {
		return
	}
	// The name may have been given to another file since f was opened.
	linked, err1 := os.Stat(path)
	opened, err2 := f.Stat()
	if err1 != nil || err2 != nil || !os.SameFile(linked, opened) {
		os.Remove(path)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(key)
	c.entries[key] = c.order.PushBack(&cacheEntry{key: key, path: path, size: size, sha256: sha, added: c.now()})
	c.total += size
	c.pruneLocked()
}

// pruneLocked drops copies past their age, then the oldest until the cache is in bounds.
func (c *blobCache) pruneLocked() {
	cutoff := c.now().Add(-c.maxAge)
	for el := c.order.Front(); el != nil; el = c.order.Front() {
		e := el.Value.(*cacheEntry)
		if c.total <= c.maxBytes && len(c.entries) <= maxCacheEntries && !e.added.Before(cutoff) {
			return
		}
		c.dropLocked(e.key)
	}
}

// drop removes the copy of key, if any.
func (c *blobCache) drop(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(key)
}

func (c *blobCache) dropLocked(key string) {
	el, ok := c.entries[key]
	if !ok {
		return
	}
	e := c.order.Remove(el).(*cacheEntry)
	delete(c.entries, key)
	c.total -= e.size
	os.Remove(e.path)
}

// open reads the copy of key, checked as it is read; false when there is none fit to
// serve.
func (c *blobCache) open(key string) (io.ReadCloser, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	var e cacheEntry
	el, ok := c.entries[key]
	if ok {
		e = *el.Value.(*cacheEntry)
		if e.added.Before(c.now().Add(-c.maxAge)) {
			c.dropLocked(key)
			ok = false
		}
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	f, err := os.Open(e.path)
	if err != nil {
		c.drop(key)
		return nil, false
	}
	if info, err := f.Stat(); err != nil || info.Size() != e.size {
		f.Close()
		c.drop(key)
		return nil, false
	}
	return &cachedBlob{c: c, f: f, key: key, size: e.size, sha256: e.sha256, h: digest.NewAsync()}, true
}

// cachedBlob reads a cached copy, checking it against the digest of its upload; the
// digest is taken beside the reader (digest.Async).
type cachedBlob struct {
	c      *blobCache
	f      *os.File
	key    string
	size   int64
	sha256 string
	h      *digest.Async
	n      int64
	err    error
}

// errCachedCopy is what a cached copy that does not match its upload fails with.
var errCachedCopy = errors.New("the local copy of the payload does not match its upload; it is dropped and the next read downloads the object")

func (b *cachedBlob) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// The copy's size is known: reading at most to it leaves the last byte to be held.
	if rest := b.size - b.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	var n int
	var err error
	if len(p) > 0 {
		n, err = b.f.Read(p)
	}
	b.h.Write(p[:n])
	b.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
		return n, err
	}
	if b.n < b.size {
		if err != nil || (n == 0 && len(p) == 0) {
			return n, b.fail()
		}
		return n, nil
	}
	held := min(n, 1)
	var one [1]byte
	if m, _ := b.f.Read(one[:]); m > 0 {
		return n - held, b.fail()
	}
	if !strings.EqualFold(hex.EncodeToString(b.h.Sum()), b.sha256) {
		return n - held, b.fail()
	}
	b.err = io.EOF
	return n, io.EOF
}

// ChecksSHA256 is the digest the copy is checked against (Checking).
func (b *cachedBlob) ChecksSHA256() string { return b.sha256 }

// fail drops the copy and makes the mismatch the reader's lasting error.
func (b *cachedBlob) fail() error {
	b.c.drop(b.key)
	b.err = fmt.Errorf("read payload %s: %w", b.key, errCachedCopy)
	return b.err
}

func (b *cachedBlob) Close() error {
	b.h.Stop()
	return b.f.Close()
}
