package cms

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"strings"
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

// BenchmarkCompress measures the compressed layer on EDI-like text and on random bytes,
// reporting the output's size as a fraction of the input's.
func BenchmarkCompress(b *testing.B) {
	var edi strings.Builder
	for i := 0; edi.Len() < 1<<20; i++ {
		fmt.Fprintf(&edi, "PO1*%d*%d*EA*%d.%02d**BP*%08d*VP*ITEM-%05d~PID*F****Widget model %d~", i, 10+i%7, i%97, i%100, 123456+i*7, i, i%13)
	}
	random := make([]byte, 10<<10)
	if _, err := rand.Read(random); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"edi-1MiB", []byte(edi.String())}, {"random-10KiB", random}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			var out []byte
			for b.Loop() {
				var err error
				if out, err = Compress(c.data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(out))/float64(len(c.data)), "ratio")
		})
	}
}
