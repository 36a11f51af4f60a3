package storage

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"wharf/internal/persistence"
)

// Store is one place payload blobs live: the local disk (Local) or an S3 bucket (S3).
type Store interface {
	Put(ctx context.Context, messageID int64, stage persistence.PayloadStage, r io.Reader, opts ...PutOption) (Blob, error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
	// Sync makes blobs written with DeferSync or DeferDirSync durable; a no-op where a
	// blob is durable when Put returns.
	Sync(ctx context.Context, keys []string) error
	// KeyOf is the key a Put of the message's stage stores under.
	KeyOf(messageID int64, stage persistence.PayloadStage) (string, error)
}

// Kinds of payload store, as the payload_storage setting names them.
const (
	KindLocal = "local"
	KindS3    = "s3"
)

// s3KeyPrefix starts the key of every blob kept on S3: "s3:<bucket>/<object key>". A
// local key can never start so (checkKey refuses colons), so a payload row's key alone
// says which store holds it.
const s3KeyPrefix = "s3:"

// Stores holds the store new blobs go to and every store older blobs may be in, and sends
// each key to the store that holds it. Blobs already stored stay readable where they are
// when the active store changes.
type Stores struct {
	active Store
	kind   string
	local  *Local
	s3     *S3 // nil when no bucket is configured
}

// NewStores writes new blobs to the store kind names (KindLocal or KindS3) and reads each
// key from the store that holds it; s3 may be nil unless kind is KindS3.
func NewStores(kind string, local *Local, s3 *S3) (*Stores, error) {
	s := &Stores{kind: kind, local: local, s3: s3}
	switch {
	case local == nil:
		return nil, fmt.Errorf("payload stores: the local store is required")
	case kind == KindLocal:
		s.active = local
	case kind == KindS3 && s3 != nil:
		s.active = s3
	case kind == KindS3:
		return nil, fmt.Errorf("payload stores: S3 is chosen but not configured")
	default:
		return nil, fmt.Errorf("payload stores: unknown kind %q", kind)
	}
	return s, nil
}

// Kind is the store new blobs go to.
func (s *Stores) Kind() string { return s.kind }

// Local is the local-disk store.
func (s *Stores) Local() *Local { return s.local }

// Put stores a blob in the active store.
func (s *Stores) Put(ctx context.Context, messageID int64, stage persistence.PayloadStage, r io.Reader, opts ...PutOption) (Blob, error) {
	return s.active.Put(ctx, messageID, stage, r, opts...)
}

// KeyOf is the key a Put of the message's stage stores under in the active store.
func (s *Stores) KeyOf(messageID int64, stage persistence.PayloadStage) (string, error) {
	return s.active.KeyOf(messageID, stage)
}

// Open reads a blob from the store its key names.
func (s *Stores) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	st, err := s.storeOf(key)
	if err != nil {
		return nil, err
	}
	return st.Open(ctx, key)
}

// Delete removes a blob from the store its key names.
func (s *Stores) Delete(ctx context.Context, key string) error {
	st, err := s.storeOf(key)
	if err != nil {
		return err
	}
	return st.Delete(ctx, key)
}

// Sync makes the local blobs among keys durable; blobs on S3 already are.
func (s *Stores) Sync(ctx context.Context, keys []string) error {
	local := make([]string, 0, len(keys))
	for _, k := range keys {
		if !strings.HasPrefix(k, s3KeyPrefix) {
			local = append(local, k)
		}
	}
	return s.local.Sync(ctx, local)
}

func (s *Stores) storeOf(key string) (Store, error) {
	if !strings.HasPrefix(key, s3KeyPrefix) {
		return s.local, nil
	}
	if s.s3 == nil {
		return nil, fmt.Errorf("payload %s is kept on S3, and no S3 bucket is configured", key)
	}
	return s.s3, nil
}

// Grow starts uploading a file while its writer writes it (see Growing) when new blobs go
// to S3; nil when they go to the local disk, which links the finished file instead.
func (s *Stores) Grow(ctx context.Context, name string, stage persistence.PayloadStage, length int64) (*Growing, error) {
	if s.kind != KindS3 {
		return nil, nil
	}
	return s.s3.Grow(ctx, name, stage, length)
}

// RemoveStaleStreams aborts the streamed uploads to the configured bucket started before
// cutoff and never finished (see S3.RemoveStaleStreams).
func (s *Stores) RemoveStaleStreams(ctx context.Context, cutoff time.Time) error {
	if s.s3 == nil {
		return nil
	}
	return s.s3.RemoveStaleStreams(ctx, cutoff)
}
