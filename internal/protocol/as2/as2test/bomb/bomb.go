// Package bomb builds decompression bombs for the AS2 packages' tests.
package bomb

import (
	"bytes"
	"compress/flate"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/binary"
	"hash/adler32"
	"io"
	"sync"
	"testing"
)

// Build is a CompressedData ContentInfo (RFC 3274) whose content is the MIME entity
// header followed by zeros zero bytes, compressed as tightly as zlib can, as an
// attacker would: a gigabyte of content takes about a megabyte. The content is never
// held, and the same bomb is built once per test binary.
func Build(t testing.TB, header string, zeros int64) []byte {
	t.Helper()
	key := bombKey{header, zeros}
	bombsMu.Lock()
	defer bombsMu.Unlock()
	if b, ok := bombs[key]; ok {
		return b
	}
	stream, err := zlibZeros(header, zeros)
	if err != nil {
		t.Fatal(err)
	}
	b, err := contentInfo(stream)
	if err != nil {
		t.Fatal(err)
	}
	bombs[key] = b
	return b
}

var (
	oidCompressedData = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 1, 9}
	oidZlibCompress   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 3, 8}
	oidData           = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
)

type encapsulated struct {
	ContentType asn1.ObjectIdentifier
	Content     []byte `asn1:"explicit,tag:0"`
}

type compressedData struct {
	Version      int
	Algorithm    pkix.AlgorithmIdentifier
	Encapsulated encapsulated
}

type contentInfoDER struct {
	ContentType asn1.ObjectIdentifier
	Content     compressedData `asn1:"explicit,tag:0"`
}

// contentInfo wraps a zlib stream in DER.
func contentInfo(stream []byte) ([]byte, error) {
	return asn1.Marshal(contentInfoDER{
		ContentType: oidCompressedData,
		Content: compressedData{
			Algorithm:    pkix.AlgorithmIdentifier{Algorithm: oidZlibCompress},
			Encapsulated: encapsulated{ContentType: oidData, Content: stream},
		},
	})
}

// zlibZeros is the zlib stream of header and zeros zero bytes. Deflating a gigabyte
// takes many seconds, so only the first chunks of zeros are deflated: once a chunk,
// flushed to a byte boundary, deflates to the same bytes as the one before it (its
// back-references reach only zeros), those bytes stand for every further whole chunk.
// The Adler-32 of zeros follows from the header's: a stays, b grows by a per byte.
func zlibZeros(header string, zeros int64) ([]byte, error) {
	var out bytes.Buffer
	out.Write([]byte{0x78, 0xda}) // deflate, 32 KiB window, best compression
	fw, err := flate.NewWriter(&out, flate.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(fw, header); err != nil {
		return nil, err
	}
	chunk := make([]byte, 1<<20)
	var prev []byte
	for rest := zeros; rest > 0; {
		n := min(rest, int64(len(chunk)))
		start := out.Len()
		if _, err := fw.Write(chunk[:n]); err != nil {
			return nil, err
		}
		if err := fw.Flush(); err != nil {
			return nil, err
		}
		rest -= n
		cur := bytes.Clone(out.Bytes()[start:])
		if n == int64(len(chunk)) && bytes.Equal(cur, prev) {
			for ; rest >= int64(len(chunk)); rest -= int64(len(chunk)) {
				out.Write(cur)
			}
		}
		prev = cur
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	const mod = 65521
	sum := adler32.Checksum([]byte(header))
	a, b := uint64(sum&0xffff), uint64(sum>>16)
	b = (b + uint64(zeros)%mod*a) % mod
	return binary.BigEndian.AppendUint32(out.Bytes(), uint32(b<<16|a)), nil
}

type bombKey struct {
	header string
	zeros  int64
}

var (
	bombsMu sync.Mutex
	bombs   = map[bombKey][]byte{}
)
