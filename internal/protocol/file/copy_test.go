package file

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// failAfter reads from r and fails once n bytes have been read.
type failAfter struct {
	r io.Reader
	n int64
}

var errSource = errors.New("source failed")

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errSource
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= int64(n)
	return n, err
}

// Both ways of copying give the file and the digest every byte, whatever the size against
// the chunks; a source that fails mid-way is reported.
func TestCopyDocument(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name    string
		size    int64
		failAt  int64 // 0: never
		wantErr error
		noHash  bool
	}{
		{"empty", 0, 0, nil, false},
		{"small", 70_000, 0, nil, false},
		{"just below pipelined", pipelinedFrom - 1, 0, nil, false},
		{"pipelined, whole chunks", pipelinedFrom, 0, nil, false},
		{"pipelined, a tail", 3*writebackEvery + copyChunk/3, 0, nil, false},
		{"pipelined, source fails", 2 * pipelinedFrom, pipelinedFrom + 5, errSource, false},
		{"small, no hash", 70_000, 0, nil, true},
		{"large, no hash", 3*writebackEvery + copyChunk/3, 0, nil, true},
		{"large, no hash, source fails", 2 * pipelinedFrom, pipelinedFrom + 5, errSource, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := make([]byte, tt.size)
			for i := range content {
				content[i] = byte(rnd.Uint32())
			}
			var src io.Reader = bytes.NewReader(content)
			if tt.failAt > 0 {
				src = &failAfter{r: src, n: tt.failAt}
			}
			f, err := os.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			n, sum, err := copyDocument(f, src, tt.size, !tt.noHash)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			if n != tt.size {
				t.Fatalf("copied %d bytes, want %d", n, tt.size)
			}
			got, err := os.ReadFile(f.Name())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, content) {
				t.Fatal("the file differs from the source")
			}
			switch want := sha256.Sum256(content); {
			case tt.noHash && sum != nil:
				t.Fatal("a copy asked for no digest returned one")
			case !tt.noHash && !bytes.Equal(sum, want[:]):
				t.Fatal("the digest differs from the source's")
			}
		})
	}
}

// A write that fails ends the copy with the write's error.
func TestCopyDocumentWriteFails(t *testing.T) {
	f, err := os.Open(filepath.Join(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, err = copyDocument(f, bytes.NewReader(make([]byte, pipelinedFrom)), pipelinedFrom, true)
	if err == nil {
		t.Fatal("writing to a directory opened for reading succeeded")
	}
}
