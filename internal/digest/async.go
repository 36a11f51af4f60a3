// Package digest takes the SHA-256 of a stream on a goroutine of its own, beside the
// goroutine that moves the bytes.
package digest

import (
	"crypto/sha256"
	"hash"
)

// Async takes the SHA-256 of the bytes written to it on a goroutine of its own, so a
// reader that checks what it hands over, or a copy that digests what it copies, costs its
// consumer no time of its own on a second core. The bytes
// are copied into a few buffers of its own: what is digested is exactly what was written.
type Async struct {
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

// NewAsync starts a digest; Sum or Stop ends its goroutine.
func NewAsync() *Async {
	d := &Async{full: make(chan []byte, digestBuffers), free: make(chan []byte, digestBuffers),
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

// Write digests p, copied, so the caller may reuse it at once.
func (d *Async) Write(p []byte) {
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
func (d *Async) Sum() []byte {
	d.Stop()
	return <-d.sum
}

// Stop ends the goroutine once it digested what was written; it may be called more than
// once, and after Sum.
func (d *Async) Stop() {
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
