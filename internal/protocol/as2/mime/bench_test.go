package mime

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"io"
	"net/http"
	"testing"

	"wharf/internal/protocol/as2/cms"
)

func benchmarkSetup(b *testing.B) ([]byte, BuildOptions, UnpackOptions) {
	ours, partner := testIdentity(b, "ours"), testIdentity(b, "partner")
	payload := make([]byte, 10<<10)
	if _, err := rand.Read(payload[:len(payload)/2]); err != nil { // half random, half compressible
		b.Fatal(err)
	}
	build := BuildOptions{
		Compress: true,
		Sign:     partner.signer(cms.SHA256),
		Encrypt:  &Encryption{Recipients: []*x509.Certificate{ours.cert}},
	}
	unpack := UnpackOptions{
		Decryption:          []cms.Recipient{ours.recipient()},
		PartnerCertificates: []*x509.Certificate{partner.cert},
	}
	return payload, build, unpack
}

// BenchmarkBuild10KiB compresses, signs and encrypts 10 KiB.
func BenchmarkBuild10KiB(b *testing.B) {
	payload, opts, _ := benchmarkSetup(b)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(payload, "bench.bin", opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnpack10KiB decrypts, verifies and decompresses 10 KiB.
func BenchmarkUnpack10KiB(b *testing.B) {
	payload, build, opts := benchmarkSetup(b)
	built, err := Build(payload, "bench.bin", build)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unpack(built.ContentType, http.Header{}, built.Body, opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream64MiB compresses, signs and encrypts 64 MiB of random bytes as a stream,
// the path of a large message of content that does not compress.
func BenchmarkStream64MiB(b *testing.B) {
	_, opts, _ := benchmarkSetup(b)
	payload := make([]byte, 64<<20)
	if _, err := rand.Read(payload); err != nil {
		b.Fatal(err)
	}
	s, err := NewStream("bench.bin", opts)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.WriteBody(io.Discard, bytes.NewReader(payload), nil); err != nil {
			b.Fatal(err)
		}
	}
}
