package mime

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
)

func TestUnpackCorpusInbound(t *testing.T) {
	dir, cases := loadCorpus(t)
	ourCert := as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, "keys/gogw.crt"))
	ourKey := as2test.PEMPrivateKey(t, as2test.CorpusFile(t, dir, "keys/gogw.key"))
	n := 0
	for _, c := range cases {
		if c.Group != "inbound" {
			continue
		}
		n++
		t.Run(filepath.Base(c.ID), func(t *testing.T) {
			header := as2test.CorpusHeader(t, dir, c.Files["request_headers"])
			body := as2test.CorpusFile(t, dir, c.Files["request_body"])
			pref := MICRequested
			if cf := c.Expected.MICAlgorithmConflict; cf != nil && cf.ThisPeerRequires == "signature_digest" {
				pref = MICSignatureDigest
			}
			res, err := Unpack(header.Get("Content-Type"), header, body, UnpackOptions{
				Decryption:          []cms.Recipient{{Certificate: ourCert, Key: ourKey.(crypto.Decrypter)}},
				PartnerCertificates: []*x509.Certificate{as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, c.SenderCertificate))},
				AllowSHA1:           true,
				VerifyTime:          corpusTime,
				MICPreference:       pref,
			})
			if err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			if want := as2test.CorpusFile(t, dir, c.Files["payload"]); !bytes.Equal(res.Payload, want) {
				t.Errorf("payload: %d bytes, want %d", len(res.Payload), len(want))
			}
			wantName := ""
			if c.Expected.Filename != nil {
				wantName = *c.Expected.Filename
			}
			if string(res.FileName) != wantName {
				t.Errorf("file name %q, want %q", res.FileName, wantName)
			}
			var layers []string
			for _, l := range res.Layers {
				layers = append(layers, string(l))
			}
			if !slices.Equal(layers, c.Expected.Layers) && !(len(layers) == 0 && len(c.Expected.Layers) == 0) {
				t.Errorf("layers %v, want %v", layers, c.Expected.Layers)
			}
			if res.Signer != nil && res.Signer.Digest == cms.SHA1 {
				// A profile with the secure defaults refuses the same message.
				_, err := Unpack(header.Get("Content-Type"), header, body, UnpackOptions{
					Decryption:          []cms.Recipient{{Certificate: ourCert, Key: ourKey.(crypto.Decrypter)}},
					PartnerCertificates: []*x509.Certificate{as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, c.SenderCertificate))},
					VerifyTime:          corpusTime,
				})
				if !errors.Is(err, cms.ErrInsufficientSecurity) {
					t.Errorf("SHA-1 without AllowSHA1: %v", err)
				}
			}
			if got, want := res.Tolerances(), as2test.CorpusTolerances(c.Expected.KeyTransport, c.Expected.SignatureAlgorithm); !slices.Equal(got, want) {
				t.Errorf("tolerances %q, want %q", got, want)
			}
			if res.Signed != c.Expected.Signed || res.Encrypted != c.Expected.Encrypted || res.Compressed != c.Expected.Compressed {
				t.Errorf("signed/encrypted/compressed = %v/%v/%v, want %v/%v/%v", res.Signed, res.Encrypted, res.Compressed,
					c.Expected.Signed, c.Expected.Encrypted, c.Expected.Compressed)
			}
			for _, l := range c.LayerDetails {
				switch {
				case l.Layer == "encrypted":
					want := map[cms.ContentCipher]string{
						cms.AES128CBC: "aes-128-cbc ", cms.AES192CBC: "aes-192-cbc ", cms.AES256CBC: "aes-256-cbc ", cms.DES3CBC: "des-ede3-cbc ",
					}[res.Decryption.Cipher]
					if want == "" || !strings.HasPrefix(l.Cipher, want) {
						t.Errorf("cipher %s, want %s", res.Decryption.Cipher, l.Cipher)
					}
				case l.Layer == "signed" && l.CMSAlgorithmProtection != nil:
					if res.Signer.AlgorithmProtection != *l.CMSAlgorithmProtection {
						t.Errorf("algorithm protection %v, want %v", res.Signer.AlgorithmProtection, *l.CMSAlgorithmProtection)
					}
				}
			}
			if mi, ok := c.Files["mic_input"]; ok {
				if want := as2test.CorpusFile(t, dir, mi); !bytes.Equal(res.MICContent, want) {
					t.Errorf("MIC content: %d bytes, want %d", len(res.MICContent), len(want))
				}
			}
			if c.Expected.MIC != "" {
				wantAlg, err := cms.ParseDigestAlgorithm(c.Expected.MICAlgorithm)
				if err != nil {
					t.Fatal(err)
				}
				got := res.MIC.String()
				if res.MIC.Algorithm != wantAlg || !strings.HasPrefix(got, c.Expected.MIC+", ") {
					t.Errorf("MIC %q (%s), want %q with %s", got, res.MIC.Algorithm, c.Expected.MIC, c.Expected.MICAlgorithm)
				}
			}
			if h := c.Expected.MICIfHeadersIncluded; h != nil && strings.HasPrefix(res.MIC.String(), h.MIC+", ") {
				t.Errorf("MIC %q covers the headers too, which the partner rejects", res.MIC)
			}
			if cf := c.Expected.MICAlgorithmConflict; cf != nil {
				for _, v := range []micValue{cf.SignatureDigest, cf.FirstRequestedMICAlg} {
					alg, _ := cms.ParseDigestAlgorithm(v.MICAlgorithm)
					if got := res.MICWith(alg); !strings.HasPrefix(got.String(), v.MIC+", ") {
						t.Errorf("MIC with %s = %q, want %q", alg, got, v.MIC)
					}
				}
			}
		})
	}
	if n != 36 {
		t.Errorf("%d inbound cases, want 36", n)
	}
}
