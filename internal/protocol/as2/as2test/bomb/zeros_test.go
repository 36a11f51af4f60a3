package bomb

import (
	"bytes"
	"compress/zlib"
	"io"
	"testing"
)

// The stream inflates to the header and exactly the zeros asked for, its checksum
// included, whether or not chunks were repeated.
func TestZlibZeros(t *testing.T) {
	const header = "Head: x\r\n\r\n"
	for _, n := range []int64{0, 5, 1 << 20, 3<<20 + 17, 64 << 20} {
		s, err := zlibZeros(header, n)
		if err != nil {
			t.Fatal(err)
		}
		r, err := zlib.NewReader(bytes.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%d zeros: %v", n, err)
		}
		if int64(len(got)) != int64(len(header))+n || string(got[:len(header)]) != header ||
			bytes.ContainsFunc(got[len(header):], func(r rune) bool { return r != 0 }) {
			t.Fatalf("%d zeros: got %d bytes", n, len(got))
		}
	}
}
