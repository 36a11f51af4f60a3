package mime

import (
	"bytes"
	"fmt"
	"io"
)

// partScanner reads a multipart body part by part as it arrives, with the delimiters
// splitMultipart finds: a part is what lies between a delimiter line and the line break
// before the next delimiter. The scanner starts in the preamble; next moves to the
// following part. Read gives the current part's bytes, byte for byte.
type partScanner struct {
	r     io.Reader
	delim []byte // "--" + boundary
	buf   []byte
	start int // buf[start:end] is read and not yet consumed
	end   int
	// prevLF is whether the byte before buf[0] ended a line (the body's start does).
	prevLF bool
	inPart bool // the current part's content is not read to its end yet
	eof    bool
}

// partBuffer is the scanner's window: a delimiter line must fit in it.
const partBuffer = 64 << 10

func newPartScanner(r io.Reader, boundary string) (*partScanner, error) {
	if boundary == "" {
		return nil, fmt.Errorf("%w: multipart without a boundary", ErrMalformed)
	}
	return &partScanner{r: r, delim: []byte("--" + boundary), buf: make([]byte, partBuffer), prevLF: true, inPart: true}, nil
}

// delimiter kinds find reports.
const (
	noDelimiter = iota
	undecided   // a boundary at a line start whose line is not read to its end yet
	delimiter
	closingDelimiter
)

// find looks for the first delimiter line in the unread bytes: its start, kind and the
// index of the line feed that ends it (end when the body ends first).
func (s *partScanner) find() (int, int, int) {
	for from := s.start; ; {
		i := bytes.Index(s.buf[from:s.end], s.delim)
		if i < 0 {
			return 0, noDelimiter, 0
		}
		j := from + i
		from = j + 1
		if !(j > 0 && s.buf[j-1] == '\n' || j == 0 && s.prevLF) {
			continue // not at the start of a line
		}
		after := j + len(s.delim)
		if s.end-after < 2 && !s.eof {
			return j, undecided, 0
		}
		if bytes.HasPrefix(s.buf[after:s.end], []byte("--")) {
			return j, closingDelimiter, s.end
		}
		lineEnd := bytes.IndexByte(s.buf[after:s.end], '\n')
		rest := s.buf[after:s.end]
		switch {
		case lineEnd >= 0:
			rest = rest[:lineEnd]
			lineEnd += after
		case !s.eof:
			return j, undecided, 0
		default:
			lineEnd = s.end
		}
		if len(bytes.Trim(rest, " \t\r")) != 0 {
			continue // a longer boundary that starts with ours
		}
		return j, delimiter, lineEnd
	}
}

// fill moves the unread bytes to the buffer's start and reads more.
func (s *partScanner) fill() error {
	if s.eof {
		return fmt.Errorf("%w: multipart body without its closing delimiter", ErrMalformed)
	}
	if s.start > 0 {
		s.prevLF = s.buf[s.start-1] == '\n'
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	}
	if s.end == len(s.buf) {
		return fmt.Errorf("%w: multipart delimiter line longer than %d bytes", ErrMalformed, len(s.buf))
	}
	n, err := s.r.Read(s.buf[s.end:])
	s.end += n
	if err == io.EOF {
		s.eof = true
		return nil
	}
	return err
}

// Read reads the current part; it ends with io.EOF at the line break before the next
// delimiter.
func (s *partScanner) Read(p []byte) (int, error) {
	if !s.inPart {
		return 0, io.EOF
	}
	for {
		j, kind, _ := s.find()
		var stop int // the bytes before stop are the part's for certain
		switch kind {
		case delimiter, closingDelimiter:
			stop = j
			if stop > s.start && s.buf[stop-1] == '\n' {
				stop--
				if stop > s.start && s.buf[stop-1] == '\r' {
					stop--
				}
			}
			if stop == s.start {
				s.inPart = false
				return 0, io.EOF
			}
		case undecided:
			stop = j - 2
		default:
			// A delimiter may begin in the last bytes, with the line break before it.
			stop = s.end - len(s.delim) - 2
		}
		if stop > s.start {
			n := copy(p, s.buf[s.start:stop])
			s.start += n
			return n, nil
		}
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
}

// next skips what is left of the current part and its delimiter line. It reports false
// once that delimiter was the closing one.
func (s *partScanner) next() (bool, error) {
	if _, err := io.Copy(io.Discard, s); err != nil {
		return false, err
	}
	for {
		j, kind, lineEnd := s.find()
		switch kind {
		case closingDelimiter:
			s.start = j
			return false, nil
		case delimiter:
			if lineEnd == s.end {
				return false, fmt.Errorf("%w: multipart body without its closing delimiter", ErrMalformed)
			}
			s.start = lineEnd + 1
			s.inPart = true
			return true, nil
		}
		if err := s.fill(); err != nil {
			return false, err
		}
	}
}
