// Package logtest holds what tests need to read a logger's output.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer collects log output written from several goroutines (a server's, a child
// process's stderr) and reads it while they still write.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
