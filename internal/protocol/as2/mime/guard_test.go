package mime

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"wharf/internal/protocol/as2/as2test/bomb"
	"wharf/internal/protocol/as2/cms"
)

const compressedType = `application/pkcs7-mime; smime-type=compressed-data; name="smime.p7z"`

// A compressed layer inflates at most to a ratio of its size past a floor, and never
// past the absolute limit, whichever way the body is held.
func TestDecompressionRatio(t *testing.T) {
	body := bomb.Build(t, "Content-Type: application/octet-stream\r\n\r\n", 64<<20)
	ratioLimit := int64(decompressionFloor + DefaultMaxDecompressionRatio*len(body))
	tests := []struct {
		name      string
		opts      UnpackOptions
		wantLimit int64 // 0: no error
	}{
		{"ratio", UnpackOptions{MaxDecompressedSize: 1 << 30}, ratioLimit},
		{"absolute limit below the ratio's", UnpackOptions{MaxDecompressedSize: 2 << 20}, 2 << 20},
		{"own ratio", UnpackOptions{MaxDecompressedSize: 1 << 30, MaxDecompressionRatio: 10}, int64(decompressionFloor + 10*len(body))},
		{"ratio large enough", UnpackOptions{MaxDecompressedSize: 1 << 30, MaxDecompressionRatio: 10000}, 0},
	}
	for _, tt := range tests {
		for _, held := range []string{"memory", "stream"} {
			t.Run(tt.name+"/"+held, func(t *testing.T) {
				tt.opts.TempDir = t.TempDir()
				var res *Result
				var err error
				if held == "memory" {
					res, err = Unpack(compressedType, http.Header{}, body, tt.opts)
					if res != nil {
						res.PayloadSize = int64(len(res.Payload))
					}
				} else {
					res, err = UnpackStream(compressedType, http.Header{}, bytes.NewReader(body), io.Discard, tt.opts)
				}
				if tt.wantLimit == 0 {
					if err != nil || res.PayloadSize != 64<<20 {
						t.Fatalf("err %v", err)
					}
					return
				}
				var le *cms.DecompressionLimitError
				if !errors.As(err, &le) || !errors.Is(err, cms.ErrDecompression) {
					t.Fatalf("err %v, want a decompression limit", err)
				}
				// One pass judges the ratio by the compressed bytes read so far, so
				// it stops no later than the whole layer's ratio.
				if le.Limit != tt.wantLimit && (held == "memory" || le.Limit > tt.wantLimit) {
					t.Errorf("limit %d, want %d", le.Limit, tt.wantLimit)
				}
			})
		}
	}
}

// A compressed layer whose content is the document, in a message that lacks a demanded
// protection, is refused once its header section is inflated. The temporary directory
// does not exist: inflating past the first mebibyte would fail with ErrIO instead.
func TestDemandsBeforeInflating(t *testing.T) {
	ours, partner := testIdentity(t, "guard-ours"), testIdentity(t, "guard-partner")
	body := bomb.Build(t, "Content-Type: application/edi-x12\r\nContent-Disposition: attachment; filename=\"bomb.edi\"\r\n\r\n", 256<<20)
	signed, err := Build([]byte("ISA*00*~\r\n"), "orders.edi", BuildOptions{Sign: partner.signer(cms.SHA256)})
	if err != nil {
		t.Fatal(err)
	}
	compressedSigned, err := cms.Compress(append([]byte("Content-Type: "+signed.ContentType+"\r\n\r\n"), signed.Body...))
	if err != nil {
		t.Fatal(err)
	}
	encryptedBomb, err := cms.Encrypt(append([]byte("Content-Type: "+compressedType+"\r\nContent-Transfer-Encoding: binary\r\n\r\n"), body...),
		[]*x509.Certificate{ours.cert}, cms.EncryptOptions{Cipher: cms.AES128CBC})
	if err != nil {
		t.Fatal(err)
	}
	const envelopedType = `application/pkcs7-mime; smime-type=enveloped-data`
	base := UnpackOptions{
		Decryption:          []cms.Recipient{ours.recipient()},
		PartnerCertificates: []*x509.Certificate{partner.cert},
		MaxDecompressedSize: 1 << 30,
		// A bomb that gets past the header fails for want of this directory.
		TempDir: filepath.Join(t.TempDir(), "missing"),
	}
	requireSigned, requireEncrypted := base, base
	requireSigned.RequireSigned = true
	requireEncrypted.RequireEncrypted = true
	requireBoth := requireSigned
	requireBoth.RequireEncrypted = true
	tests := []struct {
		name string
		ct   string
		body []byte
		opts UnpackOptions
		want error // nil: opens
	}{
		{"unsigned bomb, signature demanded", compressedType, body, requireSigned, cms.ErrInsufficientSecurity},
		{"unencrypted bomb, encryption demanded", compressedType, body, requireEncrypted, cms.ErrInsufficientSecurity},
		{"encrypted unsigned bomb, signature demanded", envelopedType, encryptedBomb, requireSigned, cms.ErrInsufficientSecurity},
		{"encrypted unsigned bomb, both demanded", envelopedType, encryptedBomb, requireBoth, cms.ErrInsufficientSecurity},
		{"bomb without demands gets past the header", compressedType, body, base, ErrIO},
		{"signed inside the compression", compressedType, compressedSigned, requireSigned, nil},
		{"signed, nothing compressed", signed.ContentType, signed.Body, requireSigned, nil},
		{"signed but encryption demanded", signed.ContentType, signed.Body, requireEncrypted, cms.ErrInsufficientSecurity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, reader := range []bool{false, true} {
				var res *Result
				var err error
				if reader {
					// Where a refusal is due, a document written at all fails the
					// write, as a bomb past its header fails for want of the
					// temporary directory in memory.
					var sink io.Writer = io.Discard
					if tt.want != nil {
						sink = diskFull{}
					}
					res, err = UnpackStream(tt.ct, http.Header{}, bytes.NewReader(tt.body), sink, tt.opts)
				} else {
					res, err = Unpack(tt.ct, http.Header{}, tt.body, tt.opts)
				}
				switch {
				case tt.want == nil && err != nil:
					t.Fatalf("reader %v: %v", reader, err)
				case tt.want == nil && !res.Signed:
					t.Errorf("reader %v: not signed", reader)
				case tt.want != nil && !errors.Is(err, tt.want):
					t.Fatalf("reader %v: err %v, want %v", reader, err, tt.want)
				}
			}
		})
	}
}

func TestHeaderEnd(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"Content-Type: a/b\r\n\r\nbody", 21, true},
		{"Content-Type: a/b\n\nbody", 19, true},
		{"\r\nbody", 2, true},
		{"\nbody", 1, true},
		{"Content-Type: a/b\r\nX: y\r\n", 0, false},
		{"Content-Type: a/b\n\r\n", 20, true},
	}
	for _, tt := range tests {
		got, ok := headerEnd([]byte(tt.in))
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("headerEnd(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// BenchmarkBombRefusal opens a gigabyte of zeros compressed to a megabyte, as the
// receiver opens a large body, under a 512 MiB size limit: refused before inflating
// when a signature is demanded, else at the ratio.
func BenchmarkBombRefusal(b *testing.B) {
	body := bomb.Build(b, "Content-Type: application/edi-x12\r\n\r\n", 1<<30)
	for _, demand := range []bool{true, false} {
		b.Run(fmt.Sprintf("signature demanded=%v", demand), func(b *testing.B) {
			opts := UnpackOptions{MaxDecompressedSize: 512 << 20, TempDir: b.TempDir(), RequireSigned: demand}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := UnpackStream(compressedType, http.Header{}, bytes.NewReader(body), io.Discard, opts); err == nil {
					b.Fatal("the bomb opened")
				}
			}
		})
	}
}
