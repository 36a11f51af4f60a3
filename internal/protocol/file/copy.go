package file

import (
	"hash"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"wharf/internal/durable"
)

const (
	// pipelinedFrom is the size from which a document is copied with its hash taken on
	// another core: below it, the simple copy costs less than the goroutines.
	pipelinedFrom = 8 << 20
	// copyChunk is the unit of a pipelined copy; copyChunks of them are in flight, so a
	// large document costs a few megabytes whatever its size.
	copyChunk  = 1 << 20
	copyChunks = 4
	// writebackEvery is how much of the file is written before its write-back starts, so
	// the flush that makes it durable waits for the tail only.
	writebackEvery = 8 << 20
)

// copyHashed copies src into f and h (none when h is nil). A document of size bytes from
// pipelinedFrom on is copied in chunks that are hashed while they are written, and its
// pages go to disk as it is written; a smaller one goes through one buffer.
func copyHashed(f *os.File, h hash.Hash, src io.Reader, size int64) (int64, error) {
	switch {
	case size >= pipelinedFrom:
	case h == nil:
		return io.Copy(f, src)
	default:
		return io.Copy(io.MultiWriter(f, h), src)
	}
	// Each chunk is released by the write and, when there is a hash, by the hasher; the
	// last release hands its buffer back.
	type chunk struct {
		b    []byte
		n    int
		refs atomic.Int32
	}
	free := make(chan *chunk, copyChunks)
	for range copyChunks {
		free <- &chunk{b: make([]byte, copyChunk)}
	}
	release := func(c *chunk) {
		if c.refs.Add(-1) == 0 {
			free <- c
		}
	}
	var toHash chan *chunk
	if h != nil {
		toHash = make(chan *chunk, copyChunks)
		var hashed sync.WaitGroup
		hashed.Add(1)
		go func() {
			defer hashed.Done()
			for c := range toHash {
				h.Write(c.b[:c.n])
				release(c)
			}
		}()
		defer func() {
			close(toHash)
			hashed.Wait()
		}()
	}

	var written, flushed int64
	for {
		c := <-free
		n, rerr := io.ReadFull(src, c.b)
		if n > 0 {
			c.n = n
			c.refs.Store(1)
			if toHash != nil {
				c.refs.Store(2)
				toHash <- c
			}
			_, werr := f.Write(c.b[:n])
			release(c)
			if werr != nil {
				return written, werr
			}
			written += int64(n)
			if written-flushed >= writebackEvery {
				durable.StartWriteback(f, flushed, written-flushed)
				flushed = written
			}
		} else {
			free <- c
		}
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return written, nil
		default:
			return written, rerr
		}
	}
}
