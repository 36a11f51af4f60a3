package storage

import (
	"crypto/sha256"
	"hash"
)

// asyncDigest takes the SHA-256 of the bytes written to it on a goroutine of its own, so
// a reader that checks what it hands over costs its consumer (a file writer that digests
// again, a sender that builds the message) no time of its own on a second core. The bytes
// are copied into a few buffers of its own: what is digested is exactly what was written.
type asyncDigest struct {
	cur  []byte
	full chan []byte
	free chan []byte
	made int
	sum  chan []byte
	h    hash.Hash
	done bool
}

const (
	digestBuffer  = 256 << 10
	digestBuffers = 4
)

func newAsyncDigest() *asyncDigest {
	d := &asyncDigest{full: make(chan []byte, digestBuffers), free: make(chan []byte, digestBuffers),
		sum: make(chan []byte, 1), h: sha256.New()}
	go func() {
		for b := range d.full {
			d.h.Write(b)
			d.free <- b[:0]
		}
		d.sum <- d.h.Sum(nil)
	}()
	return d
}

func (d *asyncDigest) Write(p []byte) {
	for len(p) > 0 {
		if d.cur == nil {
			select {
			case d.cur = <-d.free:
			default:
				if d.made < digestBuffers {
					d.made++
					d.cur = make([]byte, 0, digestBuffer)
				} else {
					d.cur = <-d.free
				}
			}
		}
		n := min(len(p), cap(d.cur)-len(d.cur))
		d.cur = append(d.cur, p[:n]...)
		p = p[n:]
		if len(d.cur) == cap(d.cur) {
			d.full <- d.cur
			d.cur = nil
		}
	}
}

// Sum is the digest of everything written; the digest takes no more writes.
func (d *asyncDigest) Sum() []byte {
	d.stop()
	return <-d.sum
}

// stop ends the goroutine once it digested what was written.
func (d *asyncDigest) stop() {
	if d.done {
		return
	}
	d.done = true
	if len(d.cur) > 0 {
		d.full <- d.cur
	}
	d.cur = nil
	close(d.full)
}
