package sender

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	gomime "mime"
	"mime/multipart"
	"slices"
	"strings"
	"time"

	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// expectation is what a receipt is judged against: what we sent and what we asked for.
type expectation struct {
	// MessageID is the Message-ID we sent, which the MDN must name.
	MessageID string
	// SignedMDN: we asked for a signed receipt, so an unsigned one proves nothing.
	SignedMDN bool
	// MessageSigned: we signed the message, so a signed receipt must carry its MIC.
	MessageSigned bool
	// Expected are the MICs a correct partner returns: computed with the algorithm we
	// requested or with our signature's digest (products disagree on which).
	Expected []mime.MIC
	// Fallback covers the same content with the other algorithms, for a partner we asked
	// for no algorithm at all; empty when we named one.
	Fallback []mime.MIC
	// Certificates are the only ones the MDN's signature is verified against.
	Certificates []*x509.Certificate
	AllowSHA1    bool
	// GCM: we encrypted with AES-GCM, which products that cannot open it store as the
	// document while still answering processed, so a wrong or missing MIC most likely
	// means the partner holds ciphertext.
	GCM bool
	// Now judges the signer certificate's validity.
	Now time.Time
}

// noteWithoutMIC is noted on an accepted signed receipt that carries no MIC.
const noteWithoutMIC = "receipt without MIC: the partner's signed MDN names no Received-Content-MIC, which it need not compute for an unsigned message"

// verdict is the judgement of one receipt.
type verdict struct {
	// MDN is what could be read of it; nil when nothing could.
	MDN *mime.ReceivedMDN
	// Definitive: authentic (its signature verified, or it is unsigned and no signature
	// was asked for) and about the message sent. Only a definitive MDN is recorded, kept
	// as the message's receipt and settles a delivery.
	Definitive bool
	// Accepted: definitive, positive and with a matching MIC (or none, where none is due).
	Accepted   bool
	MICMatched bool
	// Note says what an accepted receipt lacks, for the history and the AS2 panel.
	Note string
	// Reason says why the receipt is not accepted, and what to do about it.
	Reason string
	// Err classifies a receipt that is not definitive with the cms and mime failure
	// classes, so the MDN intake's caller can tell the partner's fault from ours.
	Err error
}

// judge reads an MDN (the Content-Type and body of a sync response or of an async POST)
// and decides whether it proves that the partner took the message intact. The sender's
// sync path, the MDN intake and the interop tests all judge through here.
func judge(contentType string, body []byte, exp expectation) verdict {
	v := judgeMDN(contentType, body, exp)
	// An authentic positive MDN refused for its MIC, for a message encrypted with
	// AES-GCM: the likely cause comes first, since the MIC alone does not say it.
	if exp.GCM && v.Definitive && !v.Accepted && v.MDN.Disposition.Successful() {
		v.Reason = gcmHint + v.Reason
	}
	return v
}

// gcmHint names the likely cause of a MIC failure after AES-GCM and what to do.
const gcmHint = "the partner may not support AES-GCM (it may hold the ciphertext as the document; " +
	"ask the partner, or choose an AES-CBC encryption algorithm in the partner profile): "

func judgeMDN(contentType string, body []byte, exp expectation) verdict {
	m, err := mime.ParseMDN(contentType, body, mime.MDNParseOptions{
		PartnerCertificates: exp.Certificates,
		AllowSHA1:           exp.AllowSHA1,
		VerifyTime:          exp.Now,
	})
	switch {
	case err != nil && m != nil && m.Signed && isSignatureFailure(err):
		return verdict{Reason: "MDN signature does not verify: " + err.Error() +
			"; check that the partner profile holds the certificate the partner signs its MDNs with", Err: err}
	case err != nil:
		return verdict{Reason: "MDN cannot be read: " + err.Error() +
			"; ask the partner to check what its AS2 software returns as an MDN", Err: err}
	}
	v := verdict{MDN: m}
	if !m.Signed && exp.SignedMDN {
		v.Reason = "MDN is not signed although a signed receipt was requested (disposition " + m.Disposition.String() +
			"); ask the partner to sign its MDNs, or turn off signed MDNs in the partner profile"
		v.Err = fmt.Errorf("%w: unsigned MDN", cms.ErrAuthentication)
		return v
	}
	if !sameMessageID(m.OriginalMessageID, exp.MessageID) {
		v.Reason = fmt.Sprintf("MDN answers another message (Original-Message-ID %s); ask the partner why its receipt names another message, then redeliver",
			clip(m.OriginalMessageID, 200))
		v.Err = fmt.Errorf("%w: Original-Message-ID", mime.ErrMalformed)
		return v
	}
	v.Definitive = true
	if !m.Disposition.Successful() {
		v.Reason = "negative MDN: " + m.Disposition.String() +
			"; the partner refused the message: resolve the cause it names with the partner, then redeliver"
		return v
	}
	switch {
	case m.ReceivedContentMIC != nil:
		got := *m.ReceivedContentMIC
		candidates := micsWith(exp.Expected, got.Algorithm)
		if len(candidates) == 0 {
			candidates = micsWith(exp.Fallback, got.Algorithm)
		}
		if len(candidates) == 0 {
			v.Reason = fmt.Sprintf("MDN MIC uses %s, which was neither requested nor used to sign; ask the partner to compute its MIC with the requested algorithm, or request the one it uses (mdn_mic_algorithm)",
				got.AlgorithmName())
			if got.Algorithm.Weak() && !exp.AllowSHA1 {
				v.Reason = fmt.Sprintf("MDN MIC uses %s, which the partner profile does not allow; allow SHA-1 for the partner or ask it for a stronger MIC",
					got.AlgorithmName())
			}
			return v
		}
		if !mime.MatchMIC(got, candidates) {
			v.Reason = fmt.Sprintf("MDN MIC %s does not match the message sent (expected %s); the partner may hold other bytes than were sent: compare the file it stored, and its MIC and compression settings, with the partner",
				got, candidates[0])
			return v
		}
		v.MICMatched = true
	case m.RawMIC != "":
		v.Reason = fmt.Sprintf("MDN MIC %q cannot be read; ask the partner to correct its Received-Content-MIC", clip(m.RawMIC, 200))
		return v
	case m.Signed && exp.MessageSigned:
		// A signed receipt without a MIC signs for a message, not for its content.
		v.Reason = "signed MDN carries no Received-Content-MIC for a signed message, so it does not prove the content arrived intact; ask the partner to return the MIC, then redeliver"
		return v
	case m.Signed:
		// Some products (pyas2-lib) compute no MIC for a message that was not signed;
		// the signed receipt still proves the partner took the message.
		v.Note = noteWithoutMIC
	}
	v.Accepted = true
	return v
}

// isSignatureFailure reports errors of the MDN's signature rather than of its structure.
func isSignatureFailure(err error) bool {
	return errors.Is(err, cms.ErrAuthentication) || errors.Is(err, cms.ErrIntegrity) ||
		errors.Is(err, cms.ErrInsufficientSecurity) || errors.Is(err, cms.ErrUnsupportedAlgorithm)
}

func micsWith(mics []mime.MIC, alg cms.DigestAlgorithm) []mime.MIC {
	var out []mime.MIC
	for _, m := range mics {
		if m.Algorithm == alg {
			out = append(out, m)
		}
	}
	return out
}

// sameMessageID compares Message-IDs, tolerating a partner that drops the angle brackets.
func sameMessageID(a, b string) bool {
	trim := func(s string) string { return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "<"), ">") }
	return a != "" && trim(a) == trim(b)
}

// micAlgorithms are the algorithms of the MICs a receipt may return. requested are the
// algorithms named in signed-receipt-micalg, signDigest is our signature's digest ("" when
// unsigned). Without a requested algorithm the partner chooses one itself, so the other
// algorithms are fallbacks (SHA-1 only when the profile allows it).
func micAlgorithms(requested []cms.DigestAlgorithm, signDigest cms.DigestAlgorithm, allowSHA1 bool) (expected, fallback []cms.DigestAlgorithm) {
	for _, a := range append(slices.Clone(requested), signDigest) {
		if a != "" && !slices.Contains(expected, a) {
			expected = append(expected, a)
		}
	}
	if len(requested) > 0 {
		return expected, nil
	}
	for _, a := range cms.DigestAlgorithms {
		if slices.Contains(expected, a) || (a.Weak() && !allowSHA1) {
			continue
		}
		fallback = append(fallback, a)
	}
	return expected, fallback
}

// peekOriginalMessageID reads the Original-Message-ID of an MDN without verifying it, to
// find the record whose partner certificates then verify the whole MDN.
func peekOriginalMessageID(contentType string, body []byte) (string, error) {
	mt, params, err := gomime.ParseMediaType(contentType)
	if err != nil {
		return "", fmt.Errorf("%w: MDN content type: %v", mime.ErrMalformed, err)
	}
	if strings.EqualFold(mt, "multipart/signed") {
		r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		part, err := r.NextRawPart()
		if err != nil {
			return "", fmt.Errorf("%w: signed MDN: %v", mime.ErrMalformed, err)
		}
		inner, err := io.ReadAll(part)
		if err != nil {
			return "", fmt.Errorf("%w: signed MDN: %v", mime.ErrMalformed, err)
		}
		contentType, body = part.Header.Get("Content-Type"), inner
	}
	m, err := mime.ParseMDN(contentType, body, mime.MDNParseOptions{})
	if err != nil {
		return "", err
	}
	if m.OriginalMessageID == "" {
		return "", fmt.Errorf("%w: the MDN names no Original-Message-ID", mime.ErrMalformed)
	}
	return m.OriginalMessageID, nil
}

// mdnRecord is what the record keeps of an authentic MDN.
func mdnRecord(v verdict, transport profile.MDNMode, messageID string, at time.Time) MDNRecord {
	m := v.MDN
	rec := MDNRecord{
		Verdict:     VerdictRefused,
		ReceivedAt:  at,
		Transport:   transport,
		MessageID:   messageID,
		Disposition: m.Disposition.String(),
		Signed:      m.Signed,
		MICMatched:  v.MICMatched,
		ReportingUA: m.ReportingUA,
		MIC:         m.RawMIC,
		Note:        v.Note,
	}
	if v.Accepted {
		rec.Verdict = VerdictAccepted
	}
	if m.Signer != nil {
		rec.SignatureDigest = string(m.Signer.Digest)
		if c := m.Signer.Certificate; c != nil {
			rec.Signer = c.Subject.String()
		}
	}
	return rec
}
