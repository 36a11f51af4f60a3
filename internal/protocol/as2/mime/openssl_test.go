package mime

import (
	"bytes"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"wharf/internal/protocol/as2/cms"
)

// OpenSSL builds S/MIME the way an AS2 partner does (sign, then encrypt)
// and Unpack opens it.
func TestUnpackOpenSSLMessages(t *testing.T) {
	dir := t.TempDir()
	ours, partner := testIdentity(t, "ours"), testIdentity(t, "partner")
	ourCert, _ := writePEM(t, dir, ours)
	partnerCert, partnerKey := writePEM(t, dir, partner)
	payload := bytes.Repeat([]byte("UNA:+.? 'UNB+UNOC:3+SENDER+RECEIVER'\r\n"), 200)
	entity := append([]byte("Content-Type: application/edifact\r\nContent-Transfer-Encoding: binary\r\n"+
		"Content-Disposition: attachment; filename=\"orders.edi\"\r\n\r\n"), payload...)
	entityFile := writeFile(t, filepath.Join(dir, "entity.txt"), entity)

	tests := []struct {
		name     string
		signArgs []string // nil: unsigned
		encArgs  []string // nil: unencrypted
		layers   []Layer
		digest   cms.DigestAlgorithm
	}{
		{"signed and aes-256-cbc", []string{"-md", "sha256"}, []string{"-aes-256-cbc"}, []Layer{LayerEncrypted, LayerSigned}, cms.SHA256},
		{"pss and oaep", []string{"-md", "sha384", "-keyopt", "rsa_padding_mode:pss"},
			[]string{"-aes-256-cbc", "-keyopt", "rsa_padding_mode:oaep", "-keyopt", "rsa_oaep_md:sha256"}, []Layer{LayerEncrypted, LayerSigned}, cms.SHA384},
		{"signed and aes-256-gcm", []string{"-md", "sha512", "-nocerts"}, []string{"-aes-256-gcm"}, []Layer{LayerEncrypted, LayerSigned}, cms.SHA512},
		{"signed only", []string{"-md", "sha256"}, nil, []Layer{LayerSigned}, cms.SHA256},
		{"encrypted only", nil, []string{"-aes-128-cbc"}, []Layer{LayerEncrypted}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := entityFile
			if tt.signArgs != nil {
				out := filepath.Join(dir, "signed.eml")
				args := []string{"cms", "-sign", "-binary", "-in", current, "-signer", partnerCert, "-inkey", partnerKey, "-out", out}
				openssl(t, append(args, tt.signArgs...)...)
				current = out
			}
			if tt.encArgs != nil {
				out := filepath.Join(dir, "encrypted.eml")
				args := []string{"cms", "-encrypt", "-binary", "-in", current, "-out", out, "-recip", ourCert}
				openssl(t, append(args, tt.encArgs...)...)
				current = out
			}
			raw, err := os.ReadFile(current)
			if err != nil {
				t.Fatal(err)
			}
			msg, err := ParseEntity(raw)
			if err != nil {
				t.Fatal(err)
			}
			header := http.Header(msg.Header)
			res, err := Unpack(header.Get("Content-Type"), header, msg.Body, UnpackOptions{
				Decryption:          []cms.Recipient{ours.recipient()},
				PartnerCertificates: []*x509.Certificate{partner.cert},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.Payload, payload) || res.FileName != "orders.edi" {
				t.Errorf("payload %d bytes, file name %q", len(res.Payload), res.FileName)
			}
			if !slices.Equal(res.Layers, tt.layers) {
				t.Errorf("layers %v, want %v", res.Layers, tt.layers)
			}
			if tt.digest != "" {
				if res.Signer.Digest != tt.digest || !bytes.Equal(res.SignedContent, entity) {
					t.Errorf("digest %s, signed content %d bytes", res.Signer.Digest, len(res.SignedContent))
				}
				if want := ComputeMIC(entity, tt.digest); !res.MIC.Equal(want) {
					t.Errorf("MIC %s, want %s", res.MIC, want)
				}
			} else if want := ComputeMIC(entity, cms.SHA256); !res.MIC.Equal(want) {
				t.Errorf("MIC %s, want %s over the decrypted entity", res.MIC, want)
			}
		})
	}
}

// What Build produces, OpenSSL decrypts and verifies back to the payload.
// OpenSSL's own multipart parser rewrites line endings, so it reads text
// payloads (CRLF throughout) as S/MIME; for binary payloads the test hands
// it the signed part and the signature separately.
func TestOpenSSLOpensBuiltMessages(t *testing.T) {
	dir := t.TempDir()
	ours, partner := testIdentity(t, "ours"), testIdentity(t, "partner")
	ourCert, _ := writePEM(t, dir, ours)
	partnerCert, partnerKey := writePEM(t, dir, partner)
	binary := make([]byte, 10000)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	text := bytes.Repeat([]byte("ST*850*0001~\r\nBEG*00*SA*PO-1**20261130~\r\n"), 100)
	tests := []struct {
		name    string
		payload []byte
		sign    *Signer
		enc     cms.EncryptOptions
	}{
		{"sha256 aes-256-cbc", binary, ours.signer(cms.SHA256), cms.EncryptOptions{Cipher: cms.AES256CBC}},
		{"sha512 aes-128-cbc oaep", binary, ours.signer(cms.SHA512), cms.EncryptOptions{Cipher: cms.AES128CBC, KeyTransport: cms.RSAOAEPSHA256}},
		{"pss aes-256-gcm", binary, &Signer{Certificate: ours.cert, Key: ours.key, Digest: cms.SHA256, PSS: true}, cms.EncryptOptions{Cipher: cms.AES256GCM}},
		{"text sha384 aes-192-cbc", text, ours.signer(cms.SHA384), cms.EncryptOptions{Cipher: cms.AES192CBC}},
		{"text pss oaep sha-1", text, &Signer{Certificate: ours.cert, Key: ours.key, Digest: cms.SHA512, PSS: true}, cms.EncryptOptions{KeyTransport: cms.RSAOAEPSHA1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			built, err := Build(tt.payload, "data.bin", BuildOptions{
				Sign:    tt.sign,
				Encrypt: &Encryption{Recipients: []*x509.Certificate{partner.cert}, EncryptOptions: tt.enc},
			})
			if err != nil {
				t.Fatal(err)
			}
			env := writeFile(t, filepath.Join(dir, "body.der"), built.Body)
			dec := filepath.Join(dir, "decrypted.eml")
			openssl(t, "cms", "-decrypt", "-binary", "-inform", "DER", "-in", env, "-recip", partnerCert, "-inkey", partnerKey, "-out", dec)
			verified := filepath.Join(dir, "verified.eml")
			if bytes.Equal(tt.payload, text) {
				openssl(t, "cms", "-verify", "-in", dec, "-CAfile", ourCert, "-purpose", "any", "-out", verified)
			} else {
				decrypted, err := os.ReadFile(dec)
				if err != nil {
					t.Fatal(err)
				}
				signed, err := ParseEntity(decrypted)
				if err != nil {
					t.Fatal(err)
				}
				_, params, _ := signed.MediaType()
				parts, err := splitMultipart(signed.Body, params["boundary"])
				if err != nil || len(parts) != 2 {
					t.Fatalf("%d parts, %v", len(parts), err)
				}
				sigPart, _ := ParseEntity(parts[1])
				sig, _ := sigPart.Content()
				content := writeFile(t, filepath.Join(dir, "content.bin"), parts[0])
				sigFile := writeFile(t, filepath.Join(dir, "sig.der"), sig)
				openssl(t, "cms", "-verify", "-binary", "-inform", "DER", "-in", sigFile, "-content", content,
					"-CAfile", ourCert, "-purpose", "any", "-out", verified)
			}
			raw, err := os.ReadFile(verified)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, built.MICContent) {
				t.Error("OpenSSL verified other bytes than the MIC covers")
			}
			e, err := ParseEntity(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(e.Body, tt.payload) || e.FileName() != "data.bin" {
				t.Errorf("payload %d bytes, file name %q", len(e.Body), e.FileName())
			}
		})
	}
}

// A message compressed after signing opens with OpenSSL: it decrypts the envelope and,
// once the compressed layer is inflated (this OpenSSL has no zlib), verifies the
// signature over exactly the bytes the MIC covers.
func TestOpenSSLOpensCompressedAfterSigning(t *testing.T) {
	dir := t.TempDir()
	ours, partner := testIdentity(t, "ours"), testIdentity(t, "partner")
	ourCert, _ := writePEM(t, dir, ours)
	partnerCert, partnerKey := writePEM(t, dir, partner)
	text := bytes.Repeat([]byte("ST*850*0001~\r\nBEG*00*SA*PO-1**20261130~\r\n"), 100)
	built, err := Build(text, "po.x12", BuildOptions{
		Compress: true, CompressAfterSigning: true, Sign: ours.signer(cms.SHA256),
		Encrypt: &Encryption{Recipients: []*x509.Certificate{partner.cert}},
	})
	if err != nil {
		t.Fatal(err)
	}
	env := writeFile(t, filepath.Join(dir, "body.der"), built.Body)
	dec := filepath.Join(dir, "decrypted.eml")
	openssl(t, "cms", "-decrypt", "-binary", "-inform", "DER", "-in", env, "-recip", partnerCert, "-inkey", partnerKey, "-out", dec)
	raw, err := os.ReadFile(dec)
	if err != nil {
		t.Fatal(err)
	}
	compressed, err := ParseEntity(raw)
	if err != nil {
		t.Fatal(err)
	}
	if mt, params, _ := compressed.MediaType(); mt != "application/pkcs7-mime" || params["smime-type"] != "compressed-data" {
		t.Fatalf("inside the envelope: %s %v, want compressed-data", mt, params)
	}
	der, err := compressed.Content()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := cms.Decompress(der, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, filepath.Join(dir, "signed.eml"), signed)
	verified := filepath.Join(dir, "verified.eml")
	openssl(t, "cms", "-verify", "-in", in, "-CAfile", ourCert, "-purpose", "any", "-out", verified)
	got, err := os.ReadFile(verified)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, built.MICContent) {
		t.Error("OpenSSL verified other bytes than the MIC covers")
	}
}

// A signed MDN we write verifies with OpenSSL.
func TestOpenSSLVerifiesBuiltMDN(t *testing.T) {
	dir := t.TempDir()
	ours := testIdentity(t, "ours")
	ourCert, _ := writePEM(t, dir, ours)
	mic := ComputeMIC([]byte("x"), cms.SHA256)
	ct, body, err := BuildMDN(MDN{
		ReportingUA: "Wharf", OriginalRecipient: "WHARF", OriginalMessageID: "<1@partner>",
		Disposition: Processed(), ReceivedContentMIC: &mic,
	}, MDNBuildOptions{Sign: ours.signer(cms.SHA256)})
	if err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, filepath.Join(dir, "mdn.eml"), append([]byte("Content-Type: "+ct+"\r\n\r\n"), body...))
	out := filepath.Join(dir, "report.eml")
	openssl(t, "cms", "-verify", "-in", in, "-CAfile", ourCert, "-purpose", "any", "-out", out)
	report, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(report, []byte("Received-Content-MIC: "+mic.String())) {
		t.Errorf("verified report lacks the MIC:\n%s", report)
	}
}
