package sender

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// A large message goes out with its envelope encrypted as the request is written: the
// body is exactly as long as announced, the partner (openssl here, and Unpack) opens it,
// and a body made again for a resend is a fresh envelope of the same length.
func TestLargeMessageStreamsItsEnvelope(t *testing.T) {
	ours, partner := as2test.NewIdentity(t, "wharf-org"), as2test.NewIdentity(t, "acme-partner")
	recipient := cms.Recipient{Certificate: partner.Cert, Key: partner.Key.(crypto.Decrypter)}
	payload := as2test.MixedPayload(32 << 20)
	built, err := mime.BuildFrom(io.MultiReader(bytes.NewReader(payload)), int64(len(payload)), "large.edi", mime.BuildOptions{
		Compress: true,
		Sign:     &mime.Signer{Certificate: ours.Cert, Key: ours.Key, Digest: cms.SHA256},
		Encrypt: &mime.Encryption{Recipients: []*x509.Certificate{partner.Cert},
			EncryptOptions: cms.EncryptOptions{Cipher: cms.AES256CBC}},
		MICAlgorithms: []cms.DigestAlgorithm{cms.SHA384},
	})
	if err != nil {
		t.Fatal(err)
	}
	if built.Body != nil || built.MICContent != nil {
		t.Fatalf("body of %d bytes and MIC content of %d bytes held, want neither", len(built.Body), len(built.MICContent))
	}

	var got struct {
		sync.Mutex
		body             []byte
		contentLength    int64
		transferEncoding []string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("server: %v", err)
		}
		got.Lock()
		got.body, got.contentLength, got.transferEncoding = body, r.ContentLength, r.TransferEncoding
		got.Unlock()
	}))
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := setBody(req, built)
	defer stop()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got.Lock()
	body := got.body
	if got.contentLength != built.BodySize() || len(got.transferEncoding) != 0 || int64(len(body)) != built.BodySize() {
		t.Fatalf("server got %d bytes, Content-Length %d, Transfer-Encoding %v; announced %d",
			len(body), got.contentLength, got.transferEncoding, built.BodySize())
	}
	got.Unlock()

	res, err := mime.Unpack(built.ContentType, built.Header, body, mime.UnpackOptions{
		Decryption:          []cms.Recipient{recipient},
		PartnerCertificates: []*x509.Certificate{ours.Cert},
		MaxDecompressedSize: 64 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Payload, payload) || string(res.FileName) != "large.edi" || len(res.Layers) != 3 {
		t.Fatalf("unpacked %d bytes named %q through %v", len(res.Payload), res.FileName, res.Layers)
	}
	if !res.MIC.Equal(built.MIC) {
		t.Errorf("receiver MIC %s, sender expects %s", res.MIC, built.MIC)
	}
	if _, ok := built.MICWith(cms.SHA384); !ok {
		t.Error("no SHA-384 MIC computed")
	}

	dir := t.TempDir()
	cert, key := as2test.WritePEM(t, dir, partner.Cert, partner.Key)
	env := filepath.Join(dir, "body.der")
	if err := os.WriteFile(env, body, 0o600); err != nil {
		t.Fatal(err)
	}
	dec := filepath.Join(dir, "signed.eml")
	as2test.OpenSSL(t, "cms", "-decrypt", "-binary", "-inform", "DER", "-in", env, "-recip", cert, "-inkey", key, "-out", dec)
	signed, err := os.ReadFile(dec)
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := cms.Decrypt(body, []cms.Recipient{recipient})
	if err != nil || !bytes.Equal(signed, plain) {
		t.Fatalf("openssl decrypted %d bytes, package cms %d (%v)", len(signed), len(plain), err)
	}

	// The transport's resend gets a new envelope of the same length around the same entity.
	again, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	second, err := io.ReadAll(again)
	again.Close()
	if err != nil || int64(len(second)) != built.BodySize() || bytes.Equal(second, body) {
		t.Fatalf("second body: %d bytes, %v", len(second), err)
	}
	if plain2, _, err := cms.Decrypt(second, []cms.Recipient{recipient}); err != nil || !bytes.Equal(plain2, plain) {
		t.Fatalf("second body decrypts to other content: %v", err)
	}
}

// A streamed body's goroutine ends when the body is closed, read or not, and stop closes
// every body made for the request.
func TestStreamedBodyEnds(t *testing.T) {
	partner := as2test.NewIdentity(t, "acme-partner")
	built, err := mime.BuildFrom(bytes.NewReader(as2test.MixedPayload(1<<20)), 1<<20, "x.bin", mime.BuildOptions{
		Encrypt: &mime.Encryption{Recipients: []*x509.Certificate{partner.Cert}},
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := setBody(req, built)
	if _, err := io.ReadFull(req.Body, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	unread, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	partial, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(partial, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	stop() // returns only once every started goroutine has
	if _, err := req.Body.Read(make([]byte, 10)); err == nil {
		t.Error("a closed body still reads")
	}
	if _, err := unread.Read(make([]byte, 10)); err == nil {
		t.Error("a body closed before its first read still reads")
	}
}
