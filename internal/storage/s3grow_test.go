//go:build unix

package storage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"wharf/internal/persistence"
)

// growingFile is a file written in steps, reporting each to its upload, and read as a
// StreamedFileBody once complete.
type growingFile struct {
	t    *testing.T
	f    *os.File
	g    *Growing
	data []byte
}

func newGrowingFile(t *testing.T, s *S3, stage persistence.PayloadStage, length int64) *growingFile {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	g, err := s.Grow(context.Background(), f.Name(), stage, length)
	if err != nil {
		t.Fatal(err)
	}
	return &growingFile{t: t, f: f, g: g}
}

func (w *growingFile) write(p []byte) {
	w.t.Helper()
	if _, err := w.f.Write(p); err != nil {
		w.t.Fatal(err)
	}
	w.data = append(w.data, p...)
	if w.g != nil {
		w.g.Grew(int64(len(w.data)))
	}
}

func (w *growingFile) body() *streamedBody {
	return &streamedBody{digestedBody: digestedBody{fileBody: fileBody{path: w.f.Name()}, sha256: sum(w.data)}, g: w.g}
}

type streamedBody struct {
	digestedBody
	g *Growing
}

func (b *streamedBody) Streamed() *Growing { return b.g }

// newStreamS3 is an S3 store whose streamed uploads use the smallest parts S3 takes.
func newStreamS3(t *testing.T) *S3 {
	s := newS3(t, "wharf/")
	s.streamPart = 5 << 20
	s.StreamParts(true)
	return s
}

// objects lists the object keys and the multipart uploads under the streamed prefix.
func streamedLeft(t *testing.T, s *S3) (objects, uploads []string) {
	t.Helper()
	ctx := context.Background()
	prefix := aws.String(s.cfg.Prefix + streamedDir)
	out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.cfg.Bucket), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		objects = append(objects, aws.ToString(o.Key))
	}
	ups, err := s.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(s.cfg.Bucket), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups.Uploads {
		uploads = append(uploads, aws.ToString(u.Key))
	}
	return objects, uploads
}

// A file uploaded as it was written is stored by completing that upload: under a key of
// the streamed prefix, with the writer's size and digest, readable whole. A file that
// ended within one part, or whose upload does not match the finished file, is uploaded
// anew under the message's key, and no streamed upload is left behind.
func TestS3GrowingUpload(t *testing.T) {
	ctx := context.Background()
	s := newStreamS3(t)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	const mib = 1 << 20
	cases := []struct {
		name     string
		chunks   int
		length   int64  // announced, or -1
		extra    []byte // written to the file without being reported
		streamed bool
	}{
		{"several parts and a tail", 12, -1, nil, true},
		{"exactly two parts", 10, -1, nil, true},
		{"within one part", 3, -1, nil, false},
		{"unreported bytes", 12, -1, []byte("more"), false},
		{"known length, one object", 12, 12 * mib, nil, true},
		{"known length, short of it", 12, 13 * mib, nil, false},
		{"known length within one part", 3, 3 * mib, nil, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newGrowingFile(t, s, persistence.PayloadReceived, tc.length)
			for range tc.chunks {
				w.write(chunk)
			}
			body := w.body()
			if tc.extra != nil {
				if _, err := w.f.Write(tc.extra); err != nil {
					t.Fatal(err)
				}
				w.data = append(w.data, tc.extra...)
				body = w.body()
			}
			id := int64(7000 + i)
			b, err := s.Put(ctx, id, persistence.PayloadReceived, body)
			if err != nil {
				t.Fatal(err)
			}
			canonical, _ := s.KeyOf(id, persistence.PayloadReceived)
			if got := strings.Contains(b.Key, "/"+streamedDir); got != tc.streamed || (!tc.streamed && b.Key != canonical) {
				t.Fatalf("stored under %s; streamed %v", b.Key, tc.streamed)
			}
			if b.Size != int64(len(w.data)) || b.SHA256 != sum(w.data) {
				t.Fatalf("Blob = %+v, want %d bytes with digest %s", b, len(w.data), sum(w.data))
			}
			if got := readAll(t, s, b.Key); !bytes.Equal(got, w.data) {
				t.Fatal("stored bytes differ from the file's")
			}
			if err := s.Delete(ctx, b.Key); err != nil {
				t.Fatal(err)
			}
			if objects, uploads := streamedLeft(t, s); len(objects)+len(uploads) > 0 {
				t.Fatalf("left behind: objects %q, uploads %q", objects, uploads)
			}
		})
	}
}

// An upload given up mid-file (a refused request) leaves neither an object nor parts,
// whether parts were in flight or not; so does a crash once the stale streams are
// removed.
func TestS3GrowingUploadAbortLeavesNothing(t *testing.T) {
	s := newStreamS3(t)
	chunk := bytes.Repeat([]byte{0x5a}, 1<<20)
	for _, c := range []struct {
		chunks int
		length int64
	}{{0, -1}, {2, -1}, {11, -1}, {2, 12 << 20}, {11, 12 << 20}, {12, 12 << 20}} {
		chunks := c.chunks
		w := newGrowingFile(t, s, persistence.PayloadUnpacked, c.length)
		for range chunks {
			w.write(chunk)
		}
		if chunks == 12 {
			// The whole body went: the object may be complete when it is given up.
			deadline := time.Now().Add(30 * time.Second)
			for objects, _ := streamedLeft(t, s); len(objects) == 0; objects, _ = streamedLeft(t, s) {
				if time.Now().After(deadline) {
					t.Fatal("the object was never stored")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		w.g.Abort()
		w.g.Abort() // twice is harmless
		if objects, uploads := streamedLeft(t, s); len(objects)+len(uploads) > 0 {
			t.Fatalf("%d MiB: left behind: objects %q, uploads %q", chunks, objects, uploads)
		}
		// A body given up is not stored from its upload.
		b, err := s.Put(context.Background(), 7100, persistence.PayloadUnpacked, w.body())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.Key, streamedDir) {
			t.Fatalf("stored under %s from an aborted upload", b.Key)
		}
	}

	// A process that ended mid-file left its upload: the stale ones are aborted.
	w := newGrowingFile(t, s, persistence.PayloadReceived, -1)
	for range 11 {
		w.write(chunk)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.g.mu.Lock()
		sent := len(w.g.parts)
		w.g.mu.Unlock()
		if sent == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the parts written were never sent")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.RemoveStaleStreams(context.Background(), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, uploads := streamedLeft(t, s); len(uploads) != 1 {
		t.Fatalf("a recent upload was removed: %q", uploads)
	}
	if err := s.RemoveStaleStreams(context.Background(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if objects, uploads := streamedLeft(t, s); len(objects)+len(uploads) > 0 {
		t.Fatalf("left behind: objects %q, uploads %q", objects, uploads)
	}
	w.g.Abort()
}
