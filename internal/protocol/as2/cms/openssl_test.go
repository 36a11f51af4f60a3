package cms

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// OpenSSL is the independent peer: what it encrypts we decrypt, and what we
// encrypt it decrypts.
func TestOpenSSLEncryptsWeDecrypt(t *testing.T) {
	dir := t.TempDir()
	ours := testIdentity(t, "ours")
	certFile, _ := writePEM(t, dir, ours)
	content := randomBytes(t, 5000)
	in := filepath.Join(dir, "content.bin")
	if err := os.WriteFile(in, content, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		cipher ContentCipher
		kt     KeyTransport
	}{
		{"aes-256-cbc", []string{"-aes-256-cbc"}, AES256CBC, RSAPKCS1v15},
		{"aes-128-cbc", []string{"-aes-128-cbc"}, AES128CBC, RSAPKCS1v15},
		{"aes-192-cbc", []string{"-aes-192-cbc"}, AES192CBC, RSAPKCS1v15},
		{"3des", []string{"-des3"}, DES3CBC, RSAPKCS1v15},
		{"oaep sha-1", []string{"-aes-256-cbc", "-keyopt", "rsa_padding_mode:oaep"}, AES256CBC, RSAOAEPSHA1},
		{"oaep sha-256", []string{"-aes-256-cbc", "-keyopt", "rsa_padding_mode:oaep", "-keyopt", "rsa_oaep_md:sha256", "-keyopt", "rsa_mgf1_md:sha256"}, AES256CBC, RSAOAEPSHA256},
		{"subject key identifier", []string{"-aes-256-cbc", "-keyid"}, AES256CBC, RSAPKCS1v15},
		{"aes-256-gcm", []string{"-aes-256-gcm"}, AES256GCM, RSAPKCS1v15},
		{"aes-128-gcm", []string{"-aes-128-gcm"}, AES128GCM, RSAPKCS1v15},
		{"ber stream", []string{"-aes-256-cbc", "-stream"}, AES256CBC, RSAPKCS1v15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, "env.der")
			// -keyopt applies to the -recip before it.
			args := []string{"cms", "-encrypt", "-binary", "-in", in, "-outform", "DER", "-out", out, "-recip", certFile}
			openssl(t, append(args, tt.args...)...)
			env, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			got, info, err := Decrypt(env, []Recipient{ours.recipient()})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, content) {
				t.Fatal("content differs")
			}
			if info.Cipher != tt.cipher || info.KeyTransport != tt.kt || len(info.Tolerances) != 0 {
				t.Errorf("info %+v", info)
			}
		})
	}
}

func TestWeEncryptOpenSSLDecrypts(t *testing.T) {
	dir := t.TempDir()
	partner := testIdentity(t, "partner")
	certFile, keyFile := writePEM(t, dir, partner)
	content := randomBytes(t, 5000)
	for _, opts := range []EncryptOptions{
		{Cipher: AES256CBC},
		{Cipher: AES128CBC},
		{Cipher: AES192CBC, KeyTransport: RSAOAEPSHA1},
		{Cipher: AES256CBC, KeyTransport: RSAOAEPSHA256},
		{Cipher: AES256CBC, SubjectKeyID: true},
		{Cipher: AES128GCM},
		{Cipher: AES256GCM, KeyTransport: RSAOAEPSHA256},
	} {
		t.Run(string(opts.Cipher)+"/"+string(opts.KeyTransport), func(t *testing.T) {
			env, err := Encrypt(content, []*x509.Certificate{partner.cert}, opts)
			if err != nil {
				t.Fatal(err)
			}
			in, out := filepath.Join(dir, "env.der"), filepath.Join(dir, "plain.bin")
			if err := os.WriteFile(in, env, 0o600); err != nil {
				t.Fatal(err)
			}
			openssl(t, "cms", "-decrypt", "-binary", "-inform", "DER", "-in", in, "-recip", certFile, "-inkey", keyFile, "-out", out)
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, content) {
				t.Fatal("openssl decrypted other content")
			}
		})
	}
}

func TestOpenSSLSignsWeVerify(t *testing.T) {
	dir := t.TempDir()
	partner := testIdentity(t, "partner")
	certFile, keyFile := writePEM(t, dir, partner)
	content := []byte("Content-Type: application/edi-x12\r\n\r\nISA*00*~\r\n")
	in := filepath.Join(dir, "content.txt")
	if err := os.WriteFile(in, content, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		digest DigestAlgorithm
		scheme SignatureScheme
	}{
		{"sha256", []string{"-md", "sha256"}, SHA256, SchemePKCS1v15},
		{"sha512 without certificate", []string{"-md", "sha512", "-nocerts"}, SHA512, SchemePKCS1v15},
		{"pss sha256", []string{"-md", "sha256", "-keyopt", "rsa_padding_mode:pss"}, SHA256, SchemePSS},
		{"pss sha384 digest salt", []string{"-md", "sha384", "-keyopt", "rsa_padding_mode:pss", "-keyopt", "rsa_pss_saltlen:digest"}, SHA384, SchemePSS},
		{"subject key identifier", []string{"-md", "sha256", "-keyid"}, SHA256, SchemePKCS1v15},
		{"ber stream", []string{"-md", "sha256", "-stream", "-nocerts"}, SHA256, SchemePKCS1v15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, "sig.der")
			args := append([]string{"cms", "-sign", "-binary", "-in", in, "-signer", certFile, "-inkey", keyFile, "-outform", "DER", "-out", out}, tt.args...)
			openssl(t, args...)
			sig, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			info, err := VerifyDetached(sig, content, []*x509.Certificate{partner.cert}, VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if info.Digest != tt.digest || info.Scheme != tt.scheme {
				t.Errorf("info %+v", info)
			}
			if _, err := VerifyDetached(sig, append(bytes.Clone(content), 'x'), []*x509.Certificate{partner.cert}, VerifyOptions{}); err == nil {
				t.Error("altered content verified")
			}
		})
	}
}

func TestWeSignOpenSSLVerifies(t *testing.T) {
	dir := t.TempDir()
	content := []byte("Content-Type: application/octet-stream\r\n\r\n\x00\x01\x02binary")
	in := filepath.Join(dir, "content.bin")
	if err := os.WriteFile(in, content, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		identity string
		digest   DigestAlgorithm
		pss      bool
		protect  bool // with the RFC 6211 attribute
	}{
		{"partner", SHA256, false, false},
		{"partner", SHA384, false, false},
		{"partner", SHA512, false, false},
		{"partner", SHA256, true, false},
		{"partner", SHA512, true, false},
		{"ec-partner", SHA256, false, false},
		{"partner", SHA384, false, true},
		{"partner", SHA256, true, true},
		{"ec-partner", SHA256, false, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/pss=%v/protect=%v", tt.identity, tt.digest, tt.pss, tt.protect), func(t *testing.T) {
			id := testIdentity(t, tt.identity)
			certFile, _ := writePEM(t, dir, id)
			sign := SignDetachedWith
			if tt.pss {
				sign = SignDetachedPSSWith
			}
			sig, err := sign(content, id.cert, id.key, nil, tt.digest, SignOptions{AlgorithmProtection: tt.protect})
			if err != nil {
				t.Fatal(err)
			}
			sigFile := filepath.Join(dir, "sig.der")
			if err := os.WriteFile(sigFile, sig, 0o600); err != nil {
				t.Fatal(err)
			}
			openssl(t, "cms", "-verify", "-binary", "-inform", "DER", "-in", sigFile, "-content", in,
				"-CAfile", certFile, "-purpose", "any", "-out", filepath.Join(dir, "verified.bin"))
			// OpenSSL 3.0 does not compare the attribute with the SignerInfo (see
			// TestAlgorithmProtectionMismatch for our check); it names it by its OID.
			printed := openssl(t, "cms", "-cmsout", "-print", "-inform", "DER", "-in", sigFile)
			if got := bytes.Contains(printed, []byte("(1.2.840.113549.1.9.52)")); got != tt.protect {
				t.Errorf("openssl sees the algorithm protection attribute: %v, want %v", got, tt.protect)
			}
		})
	}
}
