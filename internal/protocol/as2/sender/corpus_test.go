package sender

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// corpusNow lies inside the validity of the corpus certificates (captured 2026-11-30).
var corpusNow = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)

type corpusCase struct {
	ID              string            `json:"id"`
	Group           string            `json:"group"`
	AS2From         string            `json:"as2_from"`
	AS2To           string            `json:"as2_to"`
	MessageID       string            `json:"message_id"`
	PeerCertificate string            `json:"peer_certificate"`
	Files           map[string]string `json:"files"`
	Request         struct {
		Profile struct {
			Sign     string `json:"sign"`
			Encrypt  string `json:"encrypt"`
			Compress string `json:"compress"`
		} `json:"profile"`
	} `json:"request"`
	Expected struct {
		MIC               string `json:"mic"`
		MICAlgorithm      string `json:"mic_algorithm"`
		OriginalMessageID string `json:"original_message_id"`
		Disposition       string `json:"disposition"`
	} `json:"expected"`
	HTTPResponse *struct {
		StatusLine string `json:"status_line"`
	} `json:"http_response"`
	MDNTransport struct {
		Mode string `json:"mode"`
	} `json:"mdn_transport"`
	MDN struct {
		Signed      bool    `json:"signed"`
		Disposition string  `json:"disposition"`
		MIC         *string `json:"mic"`
	} `json:"mdn"`
}

func loadMDNCases(t testing.TB) (string, []corpusCase) {
	var all, out []corpusCase
	dir := as2test.CorpusCases(t, &all)
	for _, c := range all {
		if c.Group == "mdn" {
			out = append(out, c)
		}
	}
	return dir, out
}

// TestCorpusMDNs takes every captured receipt of OpenAS2 and pyas2-lib through the paths
// that judge receipts in production: a sync MDN through the sender's reading of the HTTP
// response, an async one through AcceptMDN. The record each is judged against is the one
// the sender would have written for the captured request: its Message-ID and the MICs
// over signed-content.bin for the requested algorithms and the signature's digest.
func TestCorpusMDNs(t *testing.T) {
	dir, cases := loadMDNCases(t)
	if len(cases) != 22 {
		t.Fatalf("%d MDN cases, want 22", len(cases))
	}
	dbtest.ForEachModules(t, moduleSchemas(t), func(t *testing.T, s *db.Store) {
		b := setupCorpus(t, s)
		for _, c := range cases {
			t.Run(filepath.Base(c.ID), func(t *testing.T) {
				b.runCase(t, dir, c)
			})
		}
	})
}

type corpusBundle struct {
	*bundle
}

func setupCorpus(t *testing.T, s *db.Store) *corpusBundle {
	t.Helper()
	b := setup(t, s, "http://127.0.0.1:1/unused", nil)
	ctx := context.Background()
	for _, p := range []persistence.Party{
		{Kind: persistence.PartyOrganization, Name: "gogw", DisplayName: "gogw"},
		{Kind: persistence.PartyPartner, Name: "peera", DisplayName: "OpenAS2"},
		{Kind: persistence.PartyPartner, Name: "peerb", DisplayName: "pyas2-lib"},
		{Kind: persistence.PartyPartner, Name: "peerc", DisplayName: "OpenAS2 (2026-12-01)"},
		{Kind: persistence.PartyPartner, Name: "peerd", DisplayName: "pyas2-lib (2026-12-01)"},
	} {
		if _, err := s.CreateParty(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	deps := Deps{Directory: b.dir, DB: s.ModuleSQL(), Blobs: b.blobs, Store: s, Logger: testLogger(t),
		Now: func() time.Time { return corpusNow }}
	d, err := New(deps, testTarget, NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	b.sender = d.(*Sender)
	if b.intake, err = NewIntake(deps); err != nil {
		t.Fatal(err)
	}
	return &corpusBundle{b}
}

func (b *corpusBundle) runCase(t *testing.T, dir string, c corpusCase) {
	ctx := context.Background()
	reqHeader := as2test.CorpusHeader(t, dir, c.Files["request_headers"])
	mdnHeader := as2test.CorpusHeader(t, dir, c.Files["mdn_headers"])
	mdnBody := as2test.CorpusFile(t, dir, c.Files["mdn_body"])
	// What the MIC covers: the signed part, or for an unsigned request mic-input.bin.
	micFile, ok := c.Files["signed_content"]
	if !ok {
		micFile = c.Files["mic_input"]
	}
	content := as2test.CorpusFile(t, dir, micFile)
	peerCert := as2test.PEMCertificate(t, as2test.CorpusFile(t, dir, c.PeerCertificate))

	var signDigest cms.DigestAlgorithm
	if c.Request.Profile.Sign != "" {
		var err error
		if signDigest, err = cms.ParseDigestAlgorithm(c.Request.Profile.Sign); err != nil {
			t.Fatal(err)
		}
	}
	// The partner relationship that signed with SHA-1 allows it for the receipt too.
	allowSHA1 := signDigest == cms.SHA1
	opts := mime.ParseDispositionOptions(reqHeader.Get("Disposition-Notification-Options"))
	var requested []cms.DigestAlgorithm
	for _, m := range opts.MICAlgorithms {
		if m.Algorithm != "" {
			requested = append(requested, m.Algorithm)
		}
	}
	expected, fallback := micsFor(content, requested, signDigest, allowSHA1)

	rem := profile.NewRemote()
	rem.Partner, rem.AS2ID, rem.AllowSHA1, rem.SignedMDN = persistence.PartyName(c.AS2To), profile.AS2ID(c.AS2To), allowSHA1, opts.SignedReceipt()
	rem.MDNMode = profile.MDNSync
	if c.MDNTransport.Mode == "async" {
		rem.MDNMode = profile.MDNAsync
	}
	out := profile.Outbound{Remote: rem, PartnerCertificates: []*x509.Certificate{peerCert}}
	b.dir.set(c.AS2From, c.AS2To, out)

	b.ingestFrom(t, persistence.PartyName(c.AS2From), persistence.PartyName(c.AS2To), "corpus.bin", []byte("corpus case"))
	claim := b.claim(t, time.Now())

	// The record the sender would have written. Wharf never signs with SHA-1, so a
	// SHA-1 case records "none" in the informational algorithm columns; the judgement reads
	// only the MICs and whether a signed receipt was asked for.
	signing, err := profile.ParseSigningAlgorithm(strings.ReplaceAll(cmp.Or(c.Request.Profile.Sign, "none"), "-", ""))
	if err != nil {
		signing = profile.SignNone
	}
	micAlg := profile.MICSHA256
	if len(requested) > 0 {
		if a, err := profile.ParseMICAlgorithm(string(requested[0])); err == nil {
			micAlg = a
		}
	}
	encryption := profile.EncryptAES256CBC
	if strings.HasPrefix(c.Request.Profile.Encrypt, "aes-256-gcm") {
		encryption = profile.EncryptAES256GCM
	}
	rec := OutboundRecord{
		DeliveryID: claim.Delivery.ID, MessageID: claim.Message.ID, AS2MessageID: c.MessageID,
		Organization: c.AS2From, Partner: c.AS2To, AS2From: c.AS2From, AS2To: c.AS2To,
		SigningAlgorithm: signing, EncryptionAlgorithm: encryption, KeyTransport: profile.KeyTransportRSA,
		MDNMode: rem.MDNMode, SignedMDN: rem.SignedMDN, MICAlgorithm: micAlg,
		ExpectedMICs: splitLines(micLines(expected)), fallbackMICs: splitLines(micLines(fallback)),
	}
	if err := startSend(ctx, b.store.ModuleSQL(), &rec, true); err != nil {
		t.Fatal(err)
	}

	// The judgement itself, and that it hinges on the content: the same receipt judged
	// against other content is refused when it carries a MIC.
	v := judge(mdnHeader.Get("Content-Type"), mdnBody, b.sender.expectation(rec, out))
	if encryption.GCM() {
		b.runGCMCase(t, c, &rec, out, claim, v, mdnHeader, mdnBody)
		return
	}
	if !v.Definitive || !v.Accepted {
		t.Fatalf("verdict: definitive %v, accepted %v: %s", v.Definitive, v.Accepted, v.Reason)
	}
	m := v.MDN
	if m.Signed != c.MDN.Signed || m.Disposition.String() != c.Expected.Disposition || m.OriginalMessageID != c.Expected.OriginalMessageID {
		t.Errorf("MDN signed %v, disposition %q, Original-Message-ID %q", m.Signed, m.Disposition, m.OriginalMessageID)
	}
	if c.MDN.MIC == nil {
		if v.MICMatched || m.RawMIC != "" {
			t.Errorf("MIC %q matched %v, want none", m.RawMIC, v.MICMatched)
		}
		// A signed receipt without a MIC is accepted for a message we did not sign
		// (pb-10), and noted; for a signed message it stays a failure.
		if wantNote := m.Signed && signDigest == ""; (v.Note != "") != wantNote {
			t.Errorf("note %q, want one: %v", v.Note, wantNote)
		}
		if m.Signed && signDigest == "" {
			signedRec := rec
			signedRec.SigningAlgorithm = profile.SignSHA256
			if sv := judge(mdnHeader.Get("Content-Type"), mdnBody, b.sender.expectation(signedRec, out)); sv.Accepted {
				t.Error("a signed receipt without a MIC was accepted for a signed message")
			}
		}
	} else {
		if !v.MICMatched || !strings.HasPrefix(m.RawMIC, *c.MDN.MIC+",") {
			t.Errorf("MIC %q matched %v, want %s", m.RawMIC, v.MICMatched, *c.MDN.MIC)
		}
		otherExp, otherFb := micsFor(append(bytes.Clone(content), 'x'), requested, signDigest, allowSHA1)
		other := rec
		other.ExpectedMICs, other.fallbackMICs = splitLines(micLines(otherExp)), splitLines(micLines(otherFb))
		if ov := judge(mdnHeader.Get("Content-Type"), mdnBody, b.sender.expectation(other, out)); ov.Accepted {
			t.Error("the receipt was accepted for content it does not match")
		}
	}

	// The production path of the case's transport.
	if c.MDNTransport.Mode == "sync" {
		resp := &http.Response{StatusCode: http.StatusOK, Header: mdnHeader, Body: io.NopCloser(bytes.NewReader(mdnBody))}
		res := b.sender.syncReceipt(ctx, &rec, out, resp)
		if res.Kind != persistence.OutcomeDelivered {
			t.Fatalf("sync MDN: %s %v", res.Kind, res.Err)
		}
		b.complete(t, claim, res)
	} else {
		b.complete(t, claim, delivery.AwaitAck(time.Now().Add(time.Hour)))
		if err := b.intake.AcceptMDN(ctx, mdnHeader.Get("Content-Type"), mdnHeader, mdnBody); err != nil {
			t.Fatalf("AcceptMDN: %v", err)
		}
	}
	if d := b.delivery(t, claim.Delivery.ID); d.State != persistence.DeliveryDelivered {
		t.Fatalf("delivery %s (%s)", d.State, d.LastError)
	}
	recs := b.records(t, claim.Message.ID)
	if len(recs) != 1 || recs[0].MDN == nil || recs[0].MDN.Verdict != VerdictAccepted || !recs[0].ReceiptStored {
		t.Fatalf("record %+v", recs)
	}
	if recs[0].PartnerSoftware == "" || recs[0].MDN.ReportingUA == "" {
		t.Errorf("partner software %q, reporting UA %q", recs[0].PartnerSoftware, recs[0].MDN.ReportingUA)
	}
	if stored := b.receipt(t, claim.Message.ID); !bytes.HasSuffix(stored, mdnBody) {
		t.Error("the receipt stage does not hold the MDN as received")
	}
	if recs[0].MDN.Note != v.Note {
		t.Errorf("recorded note %q, want %q", recs[0].MDN.Note, v.Note)
	}
	if v.Note != "" && !b.historyHas(t, claim.Message.ID, "receipt without MIC") {
		t.Error("the message's history does not tell the receipt came without a MIC")
	}
	if c.Request.Profile.Compress != "" && signDigest == "" && c.Request.Profile.Encrypt == "" {
		// Compressed only (ob-10): what we build expects the partner's MIC, over the
		// content without its headers.
		built, err := mime.Build(content, "stock.csv", mime.BuildOptions{Compress: true, MICAlgorithm: cms.SHA256})
		if err != nil {
			t.Fatal(err)
		}
		if got := base64.StdEncoding.EncodeToString(built.MIC.Digest); got != c.Expected.MIC || !mime.MatchMIC(*m.ReceivedContentMIC, built.ExpectedMICs) {
			t.Errorf("built MIC %s, want %s", built.MIC, c.Expected.MIC)
		}
	}
}

// micsFor computes the MICs a receipt for content may return, with the algorithms the
// sender computes them with while it builds a message.
func micsFor(content []byte, requested []cms.DigestAlgorithm, signDigest cms.DigestAlgorithm, allowSHA1 bool) (expected, fallback []mime.MIC) {
	exp, fb := micAlgorithms(requested, signDigest, allowSHA1)
	for _, a := range exp {
		expected = append(expected, mime.ComputeMIC(content, a))
	}
	for _, a := range fb {
		fallback = append(fallback, mime.ComputeMIC(content, a))
	}
	return expected, fallback
}

// runGCMCase checks a receipt of a product that cannot open AES-GCM (ob-11, pb-11): it
// stored the ciphertext and answered processed, with a MIC over the undecrypted body or
// none. The receipt is authentic but does not prove the document arrived, so the
// delivery fails naming the likely cause.
func (b *corpusBundle) runGCMCase(t *testing.T, c corpusCase, rec *OutboundRecord, out profile.Outbound, claim persistence.Claim,
	v verdict, mdnHeader http.Header, mdnBody []byte) {
	t.Helper()
	if !v.Definitive || v.Accepted || v.MICMatched {
		t.Fatalf("verdict: definitive %v, accepted %v, MIC matched %v: %s", v.Definitive, v.Accepted, v.MICMatched, v.Reason)
	}
	if v.MDN.Disposition.String() != c.Expected.Disposition {
		t.Errorf("disposition %q", v.MDN.Disposition)
	}
	if !strings.HasPrefix(v.Reason, "the partner may not support AES-GCM") {
		t.Errorf("reason %q does not name AES-GCM", v.Reason)
	}
	resp := &http.Response{StatusCode: http.StatusOK, Header: mdnHeader, Body: io.NopCloser(bytes.NewReader(mdnBody))}
	res := b.sender.syncReceipt(context.Background(), rec, out, resp)
	if res.Kind != persistence.OutcomeFailed {
		t.Fatalf("sync MDN: %s %v, want failed", res.Kind, res.Err)
	}
	b.complete(t, claim, res)
	d := b.delivery(t, claim.Delivery.ID)
	if d.State != persistence.DeliveryFailed || !strings.Contains(d.LastError, "the partner may not support AES-GCM") {
		t.Fatalf("delivery %s (%s)", d.State, d.LastError)
	}
	// The same receipt after an AES-CBC message is refused without the hint.
	cbc := *rec
	cbc.EncryptionAlgorithm = profile.EncryptAES256CBC
	if cv := judge(mdnHeader.Get("Content-Type"), mdnBody, b.sender.expectation(cbc, out)); cv.Accepted || strings.Contains(cv.Reason, "AES-GCM") {
		t.Errorf("after AES-CBC: accepted %v, reason %q", cv.Accepted, cv.Reason)
	}
}
