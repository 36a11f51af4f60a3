package mime

import (
	"bytes"
	"crypto/x509"
	"errors"
	"strings"
	"testing"

	"wharf/internal/logging/logtest"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
)

// A streamed message of every protection but GCM unpacks with our receiver's code to the
// payload, with the layers Build makes and the MIC the sender expects; the MICs are
// handed over before the body's last byte.
func TestStreamUnpackRoundTrip(t *testing.T) {
	ours, partner := testIdentity(t, "ours"), testIdentity(t, "partner")
	payload := as2test.MixedPayload(600 << 10)
	for _, tt := range buildCases(ours, partner) {
		if tt.opts.Encrypt != nil && tt.opts.Encrypt.Cipher.AEAD() {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.ContentType = "application/edi-x12"
			s, err := NewStream("order 850.edi", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var body logtest.Buffer
			writtenAtMICs := -1
			mics, err := s.WriteBody(&body, bytes.NewReader(payload), func(MICs) error {
				writtenAtMICs = len(body.String())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			written := []byte(body.String())
			if writtenAtMICs < 0 || writtenAtMICs >= len(written) {
				t.Errorf("MICs handed over after %d of %d bytes, want before the last", writtenAtMICs, len(written))
			}
			checkUnpacked(t, ours, partner, tt, s.ContentType, s.Header, written, payload, mics)

			// A second body of the same stream opens as well, under another key.
			var again bytes.Buffer
			if _, err := s.WriteBody(&again, bytes.NewReader(payload), nil); err != nil {
				t.Fatal(err)
			}
			checkUnpacked(t, ours, partner, tt, s.ContentType, s.Header, again.Bytes(), payload, mics)
			if tt.opts.Encrypt != nil && bytes.Equal(again.Bytes(), written) {
				t.Error("the same envelope twice")
			}
		})
	}
}

// An error of the MIC callback ends the body before its last byte.
func TestStreamKnownErrorEndsBody(t *testing.T) {
	s, err := NewStream("a.edi", BuildOptions{Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("cannot record")
	var body bytes.Buffer
	_, err = s.WriteBody(&body, strings.NewReader("UNB+UNOA:1'"), func(MICs) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the callback's", err)
	}
	if _, err := cms.Decompress(body.Bytes(), 1<<20); err == nil {
		t.Error("a complete compressed layer went out")
	}
}

// A content that holds the multipart boundary, even across writes, is refused rather
// than sent as a multipart/signed that parses differently.
func TestStreamRefusesBoundaryInContent(t *testing.T) {
	partner := testIdentity(t, "partner")
	const boundary = "----=_wharf_fixed"
	for _, at := range []int{0, 255<<10 + 3, 256<<10 - 5, 600 << 10} {
		payload := as2test.MixedPayload(700 << 10)
		copy(payload[at:], boundary)
		s, err := NewStream("a.bin", BuildOptions{Sign: partner.signer(cms.SHA256), newBoundary: func() string { return boundary }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.WriteBody(&bytes.Buffer{}, bytes.NewReader(payload), nil); !errors.Is(err, ErrBoundaryInContent) {
			t.Errorf("boundary at %d: err = %v, want ErrBoundaryInContent", at, err)
		}
	}
}

// GCM's tag covers the whole content, so a GCM message is not streamed.
func TestStreamRefusesGCM(t *testing.T) {
	ours := testIdentity(t, "ours")
	_, err := NewStream("a.bin", BuildOptions{Encrypt: &Encryption{Recipients: []*x509.Certificate{ours.cert},
		EncryptOptions: cms.EncryptOptions{Cipher: cms.AES128GCM}}})
	if !errors.Is(err, cms.ErrUnsupportedAlgorithm) {
		t.Fatalf("err = %v, want ErrUnsupportedAlgorithm", err)
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errors.New("connection reset")
	}
	f.n -= len(p)
	return len(p), nil
}

// A body whose destination fails ends with the destination's error, the encryption
// stage's goroutine included.
func TestStreamDestinationFails(t *testing.T) {
	ours := testIdentity(t, "ours")
	s, err := NewStream("a.bin", BuildOptions{Compress: true, Encrypt: &Encryption{Recipients: []*x509.Certificate{ours.cert}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.WriteBody(&failingWriter{n: 300 << 10}, bytes.NewReader(as2test.MixedPayload(4<<20)), nil)
	if err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("err = %v, want the destination's", err)
	}
}
