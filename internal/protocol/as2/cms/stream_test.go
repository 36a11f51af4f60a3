package cms

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A streamed envelope and a streamed CompressedData are BER with indefinite lengths that
// we open and openssl decrypts (or parses: it has no zlib), at every length around the
// chunk and block boundaries.
func TestStreamWritersRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ours := testIdentity(t, "ours")
	certFile, keyFile := writePEM(t, dir, ours)
	for _, n := range []int{0, 1, 15, 16, 17, streamChunk - 1, streamChunk, streamChunk + 1, 3*streamChunk + 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			content := randomBytes(t, n)

			var env bytes.Buffer
			ew, err := NewEncryptWriter(&env, []*x509.Certificate{ours.cert}, EncryptOptions{Cipher: AES256CBC})
			if err != nil {
				t.Fatal(err)
			}
			writeInPieces(t, ew, content)
			if err := ew.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(env.Bytes(), []byte{0x30, 0x80}) {
				t.Fatalf("envelope starts %x, want an indefinite length", env.Bytes()[:2])
			}
			got, _, err := Decrypt(env.Bytes(), []Recipient{ours.recipient()})
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("our decrypt: %v (content equal: %t)", err, bytes.Equal(got, content))
			}
			envFile := filepath.Join(dir, "env.der")
			if err := os.WriteFile(envFile, env.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := openssl(t, "cms", "-decrypt", "-binary", "-inform", "DER", "-in", envFile,
				"-recip", certFile, "-inkey", keyFile); !bytes.Equal(got, content) {
				t.Fatal("openssl decrypts other content")
			}

			var z bytes.Buffer
			cw, err := NewCompressWriter(&z)
			if err != nil {
				t.Fatal(err)
			}
			writeInPieces(t, cw, content)
			if err := cw.Close(); err != nil {
				t.Fatal(err)
			}
			got, err = Decompress(z.Bytes(), int64(n))
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("our decompress: %v", err)
			}
			zFile := filepath.Join(dir, "z.der")
			if err := os.WriteFile(zFile, z.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			// This OpenSSL has no zlib: it parses the BER, and the structure names zlib.
			if parsed := openssl(t, "asn1parse", "-inform", "DER", "-in", zFile); !bytes.Contains(parsed, []byte("zlib compress")) &&
				!bytes.Contains(parsed, []byte("1.2.840.113549.1.9.16.3.8")) {
				t.Fatalf("openssl asn1parse:\n%s", parsed)
			}
		})
	}
}

// writeInPieces writes content in pieces of growing odd sizes, so writes straddle chunks.
func writeInPieces(t *testing.T, w interface{ Write([]byte) (int, error) }, content []byte) {
	t.Helper()
	for size := 1; len(content) > 0; size = size*3 + 7 {
		k := min(size, len(content))
		if n, err := w.Write(content[:k]); err != nil || n != k {
			t.Fatalf("write %d: %d, %v", k, n, err)
		}
		content = content[k:]
	}
}

// GCM cannot stream: its tag covers the whole content.
func TestEncryptWriterRefusesGCM(t *testing.T) {
	ours := testIdentity(t, "ours")
	_, err := NewEncryptWriter(&bytes.Buffer{}, []*x509.Certificate{ours.cert}, EncryptOptions{Cipher: AES256GCM})
	if !errors.Is(err, ErrUnsupportedAlgorithm) {
		t.Fatalf("err = %v, want ErrUnsupportedAlgorithm", err)
	}
}

// A stream's zlib level is chosen per segment from its first block: stored blocks for
// content that does not compress, compressLevel for text. A file whose content changes
// part-way is stored where it must be and compressed where it can be, in one zlib stream
// any inflater reads.
func TestStreamLevel(t *testing.T) {
	line := "PO1*1*10*EA*9.25**BP*00123456*VP*ITEM-00001~"
	text := []byte(strings.Repeat(line, 3*segmentSize/44))
	random := randomBytes(t, segmentSize+sampleSize/2)
	tests := []struct {
		name    string
		content []byte
		first   int // the first segment's level
		maxSize int // of the output, when set
	}{
		{"random", randomBytes(t, 2*sampleSize), storedLevel, 0},
		{"text", []byte(strings.Repeat(line, 2*sampleSize/44)), compressLevel, 0},
		{"short random", randomBytes(t, 100), storedLevel, 0},
		{"empty", nil, compressLevel, 0},
		// The random segment is stored (a few bytes per 64 KiB block); the text after it
		// shrinks to about a fifth.
		{"random then text", append(append([]byte{}, random...), text...), storedLevel, len(random) + len(random)/100 + len(text)/4},
		{"text then random", append(append([]byte{}, text...), random...), compressLevel, len(text)/4 + len(random) + len(random)/100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var z bytes.Buffer
			cw, err := NewCompressWriter(&z)
			if err != nil {
				t.Fatal(err)
			}
			writeInPieces(t, cw, tt.content)
			if err := cw.Close(); err != nil {
				t.Fatal(err)
			}
			if got := cw.Level(); got != tt.first {
				t.Errorf("first level %d, want %d", got, tt.first)
			}
			if got, err := Decompress(z.Bytes(), int64(len(tt.content))); err != nil || !bytes.Equal(got, tt.content) {
				t.Fatalf("round trip: %v", err)
			}
			if tt.maxSize > 0 && z.Len() > tt.maxSize {
				t.Errorf("%d bytes compressed to %d, want at most %d", len(tt.content), z.Len(), tt.maxSize)
			}
		})
	}
}
