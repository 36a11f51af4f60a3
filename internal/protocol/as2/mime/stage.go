package mime

import (
	"io"
	"sync"
)

// stage hands what it is written, in blocks, to a goroutine that writes them to w: the
// layers before it (compression, digests) and w's own work (encryption) then run on two
// cores. A few blocks are in flight at most.
type stage struct {
	w    io.Writer
	free chan []byte
	full chan []byte
	cur  []byte
	done chan struct{}

	mu     sync.Mutex
	err    error
	closed bool
}

// Blocks of a stage: enough in flight that neither side waits on the other's bursts.
const (
	stageBlocks    = 4
	stageBlockSize = 256 << 10
)

func newStage(w io.Writer) *stage {
	s := &stage{w: w, free: make(chan []byte, stageBlocks), full: make(chan []byte, stageBlocks), done: make(chan struct{})}
	for range stageBlocks {
		s.free <- make([]byte, 0, stageBlockSize)
	}
	go s.run()
	return s
}

func (s *stage) run() {
	defer close(s.done)
	for b := range s.full {
		if s.failed() == nil {
			if _, err := s.w.Write(b); err != nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
		}
		s.free <- b[:0]
	}
}

func (s *stage) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Write copies p into blocks and hands each full one over; it fails once w failed.
func (s *stage) Write(p []byte) (int, error) {
	if err := s.failed(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		if s.cur == nil {
			s.cur = <-s.free
		}
		k := copy(s.cur[len(s.cur):cap(s.cur)], p)
		s.cur, p, n = s.cur[:len(s.cur)+k], p[k:], n+k
		if len(s.cur) == cap(s.cur) {
			s.full <- s.cur
			s.cur = nil
		}
	}
	return n, nil
}

// abort stops the goroutine without handing over what is left, for a body that failed;
// after Close it does nothing.
func (s *stage) abort() {
	s.cur = nil
	_ = s.Close()
}

// Close hands over the last block, waits until w has everything and reports w's error.
// It is safe to call again.
func (s *stage) Close() error {
	if s.closed {
		return s.failed()
	}
	s.closed = true
	if len(s.cur) > 0 {
		s.full <- s.cur
	}
	s.cur = nil
	close(s.full)
	<-s.done
	return s.failed()
}
