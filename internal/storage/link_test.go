//go:build unix

package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"wharf/internal/persistence"
)

// fileBody is a FileBody over a file at path, as a poller's claimed file is.
type fileBody struct {
	path string
	f    *os.File
}

func (b *fileBody) Read(p []byte) (int, error) {
	if b.f == nil {
		f, err := os.Open(b.path)
		if err != nil {
			return 0, err
		}
		b.f = f
	}
	return b.f.Read(p)
}

func (b *fileBody) OpenFile() (*os.File, error) { return os.Open(b.path) }

// A file given up to the store is stored under a second name, not copied, when it can
// be: same file system, one name, ours. Otherwise it is copied as any body is.
func TestPutLinksFileBodies(t *testing.T) {
	ctx := context.Background()
	content := bytes.Repeat([]byte("ISA*00*~"), 1000)
	sum := sha256.Sum256(content)
	cases := []struct {
		name      string
		otherName bool // the file has a second name elsewhere
		existing  []byte
		opts      []PutOption
		max       int64 // negative: no limit
		wantLink  bool
		wantErr   error
	}{
		{name: "claimed file", max: -1, wantLink: true},
		{name: "deferred sync", opts: []PutOption{DeferSync()}, max: -1, wantLink: true},
		{name: "within the limit", max: int64(len(content)), wantLink: true},
		{name: "file with another name is copied", otherName: true, max: -1},
		{name: "replaces a stored blob", existing: []byte("old"), max: -1, wantLink: true},
		{name: "over the limit", max: int64(len(content)) - 1, wantErr: ErrTooLarge},
		{name: "no replace", existing: []byte("old"), opts: []PutOption{NoReplace()}, max: -1, wantErr: fs.ErrExist},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newStore(t)
			// The claimed file sits beside the store, on its file system.
			src := filepath.Join(filepath.Dir(l.Root()), "claimed.edi")
			if err := os.WriteFile(src, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if c.otherName {
				if err := os.Link(src, src+".backup"); err != nil {
					t.Fatal(err)
				}
			}
			id := int64(100 + i)
			if c.existing != nil {
				if _, err := l.Put(ctx, id, persistence.PayloadUnpacked, bytes.NewReader(c.existing)); err != nil {
					t.Fatal(err)
				}
			}
			var b Blob
			var err error
			if c.max >= 0 {
				b, err = l.PutLimited(ctx, id, persistence.PayloadUnpacked, &fileBody{path: src}, c.max, c.opts...)
			} else {
				b, err = l.Put(ctx, id, persistence.PayloadUnpacked, &fileBody{path: src}, c.opts...)
			}
			key, _ := Key(id, persistence.PayloadUnpacked)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("Put = %v, want %v", err, c.wantErr)
				}
				if c.existing != nil && !bytes.Equal(readAll(t, l, key), c.existing) {
					t.Error("a refused Put changed the stored blob")
				}
				if c.existing == nil {
					if _, err := l.Open(ctx, key); !errors.Is(err, ErrNotFound) {
						t.Errorf("a refused Put left a blob: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Key != key || b.Size != int64(len(content)) || b.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("Blob = %+v, want key %s, %d bytes, sha256 %x", b, key, len(content), sum)
			}
			if err := l.Sync(ctx, []string{key}); err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, l, key); !bytes.Equal(got, content) {
				t.Error("stored bytes differ from the file's")
			}
			p, _ := l.Path(key)
			stored, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			orig, err := os.Stat(src)
			if err != nil {
				t.Fatal(err)
			}
			if linked := os.SameFile(stored, orig); linked != c.wantLink {
				t.Errorf("blob is the claimed file itself: %v, want %v", linked, c.wantLink)
			}
			if c.wantLink && stored.Mode().Perm() != 0o600 {
				t.Errorf("linked blob has mode %v, want 0600", stored.Mode().Perm())
			}
			if left := tempFiles(t, l); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
			// The caller removes its own name; the blob stays.
			if err := os.Remove(src); err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, l, key); !bytes.Equal(got, content) {
				t.Error("the blob changed when the claimed file's name was removed")
			}
		})
	}
}

// digestedBody is a fileBody whose writer computed its digest; reads count the bytes
// the store read from it.
type digestedBody struct {
	fileBody
	sha256 string
	opened int
}

func (b *digestedBody) OpenFile() (*os.File, error) {
	b.opened++
	return b.fileBody.OpenFile()
}

func (b *digestedBody) SHA256() string { return b.sha256 }

// A file whose digest its writer computed is linked without being read again: the blob
// takes the digest it was given.
func TestPutLinksDigestedFileBodyUnread(t *testing.T) {
	ctx := context.Background()
	l := newStore(t)
	src := filepath.Join(filepath.Dir(l.Root()), "spooled.edi")
	content := bytes.Repeat([]byte("UNB+UNOA"), 4096)
	if err := os.WriteFile(src, content, 0o600); err != nil {
		t.Fatal(err)
	}
	// A digest no reading of the file gives, so the blob shows where it came from.
	given := hex.EncodeToString(bytes.Repeat([]byte{0xab}, sha256.Size))
	body := &digestedBody{fileBody: fileBody{path: src}, sha256: given}
	b, err := l.Put(ctx, 7, persistence.PayloadReceived, body)
	if err != nil {
		t.Fatal(err)
	}
	if b.SHA256 != given || b.Size != int64(len(content)) {
		t.Errorf("Blob = %+v, want the given digest and %d bytes", b, len(content))
	}
	p, _ := l.Path(b.Key)
	stored, _ := os.Stat(p)
	orig, _ := os.Stat(src)
	if !os.SameFile(stored, orig) || body.opened != 1 {
		t.Errorf("linked %v after %d opens, want the file linked after one", os.SameFile(stored, orig), body.opened)
	}
}

// S3 takes the digest of such a file too, rather than digesting it while it uploads.
func TestS3PutTakesDigestOfDigestedFileBody(t *testing.T) {
	ctx := context.Background()
	s := newS3(t, "digested/")
	src := filepath.Join(t.TempDir(), "spooled.edi")
	content := bytes.Repeat([]byte("UNB+UNOA"), 4096)
	if err := os.WriteFile(src, content, 0o600); err != nil {
		t.Fatal(err)
	}
	given := hex.EncodeToString(bytes.Repeat([]byte{0xcd}, sha256.Size))
	b, err := s.Put(ctx, 8, persistence.PayloadReceived, &digestedBody{fileBody: fileBody{path: src}, sha256: given})
	if err != nil {
		t.Fatal(err)
	}
	if b.SHA256 != given || b.Size != int64(len(content)) {
		t.Errorf("Blob = %+v, want the given digest and %d bytes", b, len(content))
	}
	if got := readAll(t, s, b.Key); !bytes.Equal(got, content) {
		t.Error("stored bytes differ from the file's")
	}
}
