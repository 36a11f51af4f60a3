package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"wharf/internal/durable"
)

// Named blobs belong to no message: exports such as history archives, under a clean
// relative name like "history/2026-09.jsonl.gz". A message's blobs live under numbered
// directories, so a name starting with a letter never meets one.

// PutNamed stores r under name in the active store and returns its blob.
func (s *Stores) PutNamed(ctx context.Context, name string, r io.Reader) (Blob, error) {
	switch st := s.active.(type) {
	case *Local:
		return st.PutNamed(ctx, name, r)
	case *S3:
		return st.PutNamed(ctx, name, r)
	default:
		return Blob{}, fmt.Errorf("put %s: the store cannot keep named blobs", name)
	}
}

func checkName(name string) error {
	if err := checkKey(name); err != nil {
		return err
	}
	if c := name[0]; c < 'a' || c > 'z' {
		return fmt.Errorf("%w %q: a named blob starts with a lower-case letter", ErrInvalidKey, name)
	}
	return nil
}

// PutNamed writes r to a temporary file, syncs it and renames it to name, replacing what
// was there.
func (l *Local) PutNamed(ctx context.Context, name string, r io.Reader) (Blob, error) {
	if err := checkName(name); err != nil {
		return Blob{}, err
	}
	if dir := path.Dir(name); dir != "." {
		if err := l.ensureDir(dir); err != nil {
			return Blob{}, fmt.Errorf("put %s: %w", name, err)
		}
	}
	f, err := os.CreateTemp(l.tmp, "named.*")
	if err != nil {
		return Blob{}, fmt.Errorf("put %s: %w", name, err)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), ctxReader{ctx, r})
	if err != nil {
		return Blob{}, fmt.Errorf("put %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return Blob{}, fmt.Errorf("put %s: sync: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return Blob{}, fmt.Errorf("put %s: %w", name, err)
	}
	final := filepath.Join(l.root, filepath.FromSlash(name))
	if err := os.Rename(f.Name(), final); err != nil {
		return Blob{}, fmt.Errorf("put %s: %w", name, err)
	}
	committed = true
	if err := durable.SyncDir(filepath.Dir(final)); err != nil {
		return Blob{}, fmt.Errorf("put %s: %w", name, err)
	}
	return Blob{Key: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// PutNamed uploads r as the object <prefix><name>.
func (s *S3) PutNamed(ctx context.Context, name string, r io.Reader) (Blob, error) {
	if err := checkName(name); err != nil {
		return Blob{}, err
	}
	object := s.cfg.Prefix + name
	return s.upload(ctx, s3KeyPrefix+s.cfg.Bucket+"/"+object, object, r, false, false)
}
