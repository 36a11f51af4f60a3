package mime

import (
	"crypto/x509"
	"path/filepath"
	"strings"
	"testing"

	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
)

func TestParseMDNCorpus(t *testing.T) {
	dir, cases := loadCorpus(t)
	n := 0
	for _, c := range cases {
		if c.Group != "mdn" {
			continue
		}
		n++
		t.Run(filepath.Base(c.ID), func(t *testing.T) {
			header := as2test.CorpusHeader(t, dir, c.Files["mdn_headers"])
			body := as2test.CorpusFile(t, dir, c.Files["mdn_body"])
			peer := as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, c.PeerCertificate))
			got, err := ParseMDN(header.Get("Content-Type"), body, MDNParseOptions{
				PartnerCertificates: []*x509.Certificate{peer},
				AllowSHA1:           true,
				VerifyTime:          corpusTime,
				RequireSigned:       c.MDN.Signed,
			})
			if err != nil {
				t.Fatalf("ParseMDN: %v", err)
			}
			if got.Signed != c.MDN.Signed {
				t.Errorf("signed = %v, want %v", got.Signed, c.MDN.Signed)
			}
			if got.Signed {
				if want, _ := cms.ParseDigestAlgorithm(*c.MDN.SignatureDigestAlgorithm); got.Signer.Digest != want {
					t.Errorf("MDN signed with %s, want %s", got.Signer.Digest, want)
				}
			}
			if d := got.Disposition.String(); d != c.MDN.Disposition || !got.Disposition.Successful() {
				t.Errorf("disposition %q, want %q", d, c.MDN.Disposition)
			}
			if got.OriginalMessageID != c.MessageID {
				t.Errorf("Original-Message-ID %q, want %q", got.OriginalMessageID, c.MessageID)
			}
			if c.MDN.MIC == nil {
				if got.ReceivedContentMIC != nil {
					t.Errorf("MIC %v, want none", got.ReceivedContentMIC)
				}
				return
			}
			if got.ReceivedContentMIC == nil {
				t.Fatalf("no MIC, want %s", *c.MDN.MIC)
			}
			if !strings.HasPrefix(got.RawMIC, *c.MDN.MIC+",") {
				t.Errorf("MIC %q, want %q", got.RawMIC, *c.MDN.MIC)
			}
			// The MIC must match the request it answers, computed with
			// either the requested algorithm or the signing digest.
			// For an unsigned request the corpus names the bytes mic-input.bin instead.
			micFile, ok := c.Files["signed_content"]
			if !ok {
				micFile = c.Files["mic_input"]
			}
			signedContent := as2test.CorpusFile(t, dir, micFile)
			if c.MDN.MICCovers == "request_body" {
				// A product that could not open the message (AES-GCM) hashed the
				// body as it arrived, so the MIC matches nothing the sender kept.
				signedContent = as2test.CorpusFile(t, dir, c.Files["request_body"])
			}
			reqHeader := as2test.CorpusHeader(t, dir, c.Files["request_headers"])
			allowed := map[cms.DigestAlgorithm]bool{}
			if alg, err := cms.ParseDigestAlgorithm(c.Expected.MICAlgorithm); err == nil {
				allowed[alg] = true // the signature's digest
			}
			if first, ok := ParseDispositionOptions(reqHeader.Get("Disposition-Notification-Options")).FirstSupportedMIC(); ok {
				allowed[first.Algorithm] = true
			}
			mic := *got.ReceivedContentMIC
			if !allowed[mic.Algorithm] {
				t.Errorf("MIC algorithm %s is neither requested nor the signature's (%v)", mic.Algorithm, allowed)
			}
			if want := ComputeMIC(signedContent, mic.Algorithm); !mic.Equal(want) {
				t.Errorf("MIC %s does not match the request (%s)", mic, want)
			}
		})
	}
	if n != 22 {
		t.Errorf("%d MDN cases, want 22", n)
	}
}
