package cms

import (
	"bytes"
	"crypto/rand"
	"testing"
)

// The header Compressor puts before the zlib stream is the DER a
// CompressedData of that stream has, at every length boundary of DER.
func TestCompressorHeader(t *testing.T) {
	for _, n := range []int{0, 1, 90, 120, 127, 128, 200, 255, 256, 65000, 65535, 65536, 70000, 1 << 20} {
		content := make([]byte, n)
		if _, err := rand.Read(content); err != nil {
			t.Fatal(err)
		}
		var z bytes.Buffer
		c := NewCompressor(&z)
		if _, err := c.Write(content); err != nil {
			t.Fatal(err)
		}
		head, err := c.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := contentInfo(oidCompressedData, derSequence(
			mustMarshal(0),
			derSequence(mustMarshal(oidZlibCompress)),
			derSequence(mustMarshal(oidData), derExplicit(0, derOctets(z.Bytes()))),
		))
		got := append(head, z.Bytes()...)
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: header %x, want %x", n, head, want[:len(head)])
		}
		out, err := Decompress(got, int64(n))
		if err != nil || !bytes.Equal(out, content) {
			t.Fatalf("%d bytes: round trip: %v", n, err)
		}
	}
}
