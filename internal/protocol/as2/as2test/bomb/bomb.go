// Package bomb builds decompression bombs for the AS2 packages' tests.
package bomb

import (
	"bytes"
	"io"
	"sync"
	"testing"

	"wharf/internal/protocol/as2/cms"
)

// Build is a CompressedData ContentInfo whose content is the MIME entity
// header followed by zeros zero bytes. It is compressed as it is produced, so a
// gigabyte of content costs a megabyte of memory; the same bomb is built once
// per test binary.
func Build(t testing.TB, header string, zeros int64) []byte {
	t.Helper()
	key := bombKey{header, zeros}
	bombsMu.Lock()
	defer bombsMu.Unlock()
	if b, ok := bombs[key]; ok {
		return b
	}
	var z bytes.Buffer
	c := cms.NewCompressor(&z)
	if _, err := io.WriteString(c, header); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(c, zeroReader{}, zeros); err != nil {
		t.Fatal(err)
	}
	head, err := c.Close()
	if err != nil {
		t.Fatal(err)
	}
	b := append(head, z.Bytes()...)
	bombs[key] = b
	return b
}

type bombKey struct {
	header string
	zeros  int64
}

var (
	bombsMu sync.Mutex
	bombs   = map[bombKey][]byte{}
)

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
