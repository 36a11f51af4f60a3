package cms

import (
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"hash"
	"hash/adler32"
	"io"
	"sync"
)

// A streamed message (CompressWriter) picks its zlib level block by block. Measured
// with compress/zlib on one core of the 2-core build host, 32 MiB each, while other
// work ran on the host:
//
//	content               level 1            level 2             level 6
//	EDI text (PO1 lines)  ratio 0.212, 196   ratio 0.182, 171    ratio 0.181, 43 MB/s
//	random bytes          ratio 1.000, 138   ratio 1.000, 60     ratio 1.000, 62 MB/s
//
// and on a quiet host random bytes run at 454 MB/s at level 1 against 72 MB/s at level
// 2, while stored blocks (level 0) cost a copy and the Adler-32. Content that does not
// compress (already compressed or encrypted files) gains nothing at any level, so it goes
// in stored blocks; content that barely compresses goes at level 1, where it costs a
// sixth of level 2; text goes at compressLevel.
//
// The choice is made again for every segment from the segment's first block, so a file
// whose kind of content changes part-way (an archive followed by text) is still
// compressed where it can be: the deflate stream is flushed to a byte boundary and the
// next segment's blocks come from a compressor at its own level. A deflate stream is a
// sequence of blocks, each decodable alone, so the result is one ordinary zlib stream.
const (
	// sampleSize is the block a segment's level is chosen from.
	sampleSize = 64 << 10
	// segmentSize is how often the level is chosen again; the sample costs a level-1
	// compression of 1/64 of the content.
	segmentSize = 4 << 20
	// incompressible is the ratio at level 1 from which a sample counts as not
	// compressing; uncompressed is the ratio from which it is stored.
	incompressible = 0.9
	uncompressed   = 0.97
	fastLevel      = flate.BestSpeed
	storedLevel    = flate.NoCompression
)

// zlibPools keep zlib writers between in-memory messages (compressLevel) and the
// level-1 sampler: each holds about a megabyte of compressor state.
var zlibPools = map[int]*sync.Pool{fastLevel: {}, compressLevel: {}}

// flatePools keep raw deflate writers per level for streamed messages.
var flatePools = map[int]*sync.Pool{storedLevel: {}, fastLevel: {}, compressLevel: {}}

// resetter is a compressor a pool keeps between streams.
type resetter interface{ Reset(io.Writer) }

// getPooled returns a compressor at level writing to w, from pools or made new.
func getPooled[W resetter](pools map[int]*sync.Pool, level int, w io.Writer, make func(io.Writer, int) (W, error)) W {
	if c, ok := pools[level].Get().(W); ok {
		c.Reset(w)
		return c
	}
	c, _ := make(w, level) // fails only for an invalid level
	return c
}

// putPooled hands a closed compressor back; it must not keep its last destination alive.
func putPooled[W resetter](pools map[int]*sync.Pool, level int, c W) {
	c.Reset(io.Discard)
	pools[level].Put(c)
}

func getZlib(level int, w io.Writer) *zlib.Writer {
	return getPooled(zlibPools, level, w, zlib.NewWriterLevel)
}

func putZlib(level int, zw *zlib.Writer) { putPooled(zlibPools, level, zw) }

func getFlate(level int, w io.Writer) *flate.Writer {
	return getPooled(flatePools, level, w, flate.NewWriter)
}

func putFlate(level int, fw *flate.Writer) { putPooled(flatePools, level, fw) }

// streamLevel is the level for content starting with sample (see sampleSize).
func streamLevel(sample []byte) int {
	if len(sample) == 0 {
		return compressLevel
	}
	var n countWriter
	n.w = io.Discard
	zw := getZlib(fastLevel, &n)
	_, _ = zw.Write(sample)
	_ = zw.Close()
	putZlib(fastLevel, zw)
	switch ratio := float64(n.n) / float64(len(sample)); {
	case ratio >= uncompressed:
		return storedLevel
	case ratio >= incompressible:
		return fastLevel
	}
	return compressLevel
}

// zlibHeader opens a zlib stream: deflate with a 32 KiB window, no dictionary. Its
// level bits are informative only, and a stream's segments may differ in level.
var zlibHeader = []byte{0x78, 0x01}

// sampledZlib is a zlib stream whose level is chosen for each segment once the
// segment's first sampleSize bytes (or all of a shorter rest) are known.
type sampledZlib struct {
	w       io.Writer
	sum     hash.Hash32
	sample  []byte
	fw      *flate.Writer
	level   int   // of fw
	first   int   // level of the first segment, -1 before it is chosen
	left    int64 // bytes of the current segment still to come after its sample
	started bool  // the zlib header is written
}

func newSampledZlib(w io.Writer) *sampledZlib {
	return &sampledZlib{w: w, sum: adler32.New(), first: -1}
}

func (z *sampledZlib) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if z.fw != nil && z.left > 0 {
			k := int(min(int64(len(p)), z.left))
			n, err := z.fw.Write(p[:k])
			z.sum.Write(p[:n])
			written += n
			z.left -= int64(n)
			if err != nil {
				return written, err
			}
			p = p[k:]
			continue
		}
		if z.sample == nil {
			z.sample = make([]byte, 0, sampleSize)
		}
		k := min(len(p), sampleSize-len(z.sample))
		z.sample = append(z.sample, p[:k]...)
		written += k
		p = p[k:]
		if len(z.sample) < sampleSize {
			break
		}
		if err := z.startSegment(); err != nil {
			return written, err
		}
	}
	return written, nil
}

// startSegment chooses the level of a segment from its sample and compresses the
// sample, switching compressors at a byte boundary when the level changes.
func (z *sampledZlib) startSegment() error {
	level := streamLevel(z.sample)
	if !z.started {
		if _, err := z.w.Write(zlibHeader); err != nil {
			return err
		}
		z.started = true
	}
	if z.first < 0 {
		z.first = level
	}
	if z.fw != nil && z.level != level {
		if err := z.fw.Flush(); err != nil {
			return err
		}
		putFlate(z.level, z.fw)
		z.fw = nil
	}
	if z.fw == nil {
		z.fw, z.level = getFlate(level, z.w), level
	}
	n, err := z.fw.Write(z.sample)
	z.sum.Write(z.sample[:n])
	z.sample = z.sample[:0]
	z.left = segmentSize - sampleSize
	return err
}

// Close ends the zlib stream: the last segment, the final block and the Adler-32.
func (z *sampledZlib) Close() error {
	if z.fw == nil || len(z.sample) > 0 {
		if err := z.startSegment(); err != nil {
			return err
		}
	}
	err := z.fw.Close()
	putFlate(z.level, z.fw)
	z.fw = nil
	if err != nil {
		return err
	}
	_, err = z.w.Write(binary.BigEndian.AppendUint32(nil, z.sum.Sum32()))
	return err
}
