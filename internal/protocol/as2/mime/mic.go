package mime

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"wharf/internal/protocol/as2/cms"
)

// MIC is a message integrity check value as AS2 returns it in an MDN's
// Received-Content-MIC field.
type MIC struct {
	Digest    []byte
	Algorithm cms.DigestAlgorithm
	// Name is the algorithm as written on the wire; empty means the RFC 5751
	// spelling. A receiver echoes the partner's spelling, because some
	// products compare the name as a string.
	Name string
}

// ComputeMIC digests data with alg.
func ComputeMIC(data []byte, alg cms.DigestAlgorithm) MIC {
	h := alg.Hash().New()
	h.Write(data)
	return MIC{Digest: h.Sum(nil), Algorithm: alg}
}

// AlgorithmName is the spelling used in String.
func (m MIC) AlgorithmName() string {
	if m.Name != "" {
		return m.Name
	}
	return m.Algorithm.MICName()
}

// String formats the MIC as in Received-Content-MIC: "<base64>, sha-256".
func (m MIC) String() string {
	if len(m.Digest) == 0 {
		return ""
	}
	return base64.StdEncoding.EncodeToString(m.Digest) + ", " + m.AlgorithmName()
}

// Equal compares the digests and algorithms (not the spelling), in constant
// time over the digest.
func (m MIC) Equal(o MIC) bool {
	return m.Algorithm == o.Algorithm && len(m.Digest) > 0 &&
		subtle.ConstantTimeCompare(m.Digest, o.Digest) == 1
}

// ParseMIC reads a Received-Content-MIC value ("<base64>, <algorithm>"),
// accepting any spelling of the algorithm ParseDigestAlgorithm knows.
func ParseMIC(s string) (MIC, error) {
	v, a, ok := strings.Cut(s, ",")
	if !ok {
		return MIC{}, fmt.Errorf("%w: MIC %q has no algorithm", ErrMalformed, s)
	}
	name := strings.TrimSpace(a)
	alg, err := cms.ParseDigestAlgorithm(name)
	if err != nil {
		return MIC{}, err
	}
	d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return MIC{}, fmt.Errorf("%w: MIC value: %w", ErrMalformed, err)
	}
	if len(d) != alg.Hash().Size() {
		return MIC{}, fmt.Errorf("%w: MIC of %d bytes for %s", ErrMalformed, len(d), alg)
	}
	return MIC{Digest: d, Algorithm: alg, Name: name}, nil
}

// RequestedMIC is one algorithm of signed-receipt-micalg as the partner
// wrote it; Algorithm is empty when we do not support it.
type RequestedMIC struct {
	Name      string
	Algorithm cms.DigestAlgorithm
}

// DispositionOptions is a parsed Disposition-Notification-Options header.
type DispositionOptions struct {
	// Protocol is the signed-receipt-protocol value ("pkcs7-signature"),
	// empty when none was asked.
	Protocol           string
	ProtocolImportance string // "required" or "optional"
	MICAlgorithms      []RequestedMIC
	MICImportance      string
}

// ParseDispositionOptions reads a Disposition-Notification-Options value
// such as "signed-receipt-protocol=optional, pkcs7-signature;
// signed-receipt-micalg=optional, sha-256, sha1". It is lenient: unknown
// parameters are ignored and a missing importance is tolerated.
func ParseDispositionOptions(s string) DispositionOptions {
	var o DispositionOptions
	for _, param := range strings.Split(s, ";") {
		name, value, ok := strings.Cut(param, "=")
		if !ok {
			continue
		}
		var vals []string
		for _, v := range strings.Split(value, ",") {
			if v = strings.Trim(strings.TrimSpace(v), `"`); v != "" {
				vals = append(vals, v)
			}
		}
		importance := ""
		if len(vals) > 0 && (strings.EqualFold(vals[0], "required") || strings.EqualFold(vals[0], "optional")) {
			importance, vals = strings.ToLower(vals[0]), vals[1:]
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "signed-receipt-protocol":
			o.ProtocolImportance = importance
			if len(vals) > 0 {
				o.Protocol = strings.ToLower(vals[0])
			}
		case "signed-receipt-micalg":
			o.MICImportance = importance
			for _, v := range vals {
				alg, _ := cms.ParseDigestAlgorithm(v)
				o.MICAlgorithms = append(o.MICAlgorithms, RequestedMIC{Name: v, Algorithm: alg})
			}
		}
	}
	return o
}

// SignedReceipt reports whether a signed MDN was asked for.
func (o DispositionOptions) SignedReceipt() bool { return o.Protocol != "" }

// FirstSupportedMIC is the first requested algorithm we support.
func (o DispositionOptions) FirstSupportedMIC() (RequestedMIC, bool) {
	for _, m := range o.MICAlgorithms {
		if m.Algorithm != "" {
			return m, true
		}
	}
	return RequestedMIC{}, false
}

// MICPreference decides the MIC algorithm when the partner's request and
// its signature disagree. Products differ here: OpenAS2 accepts only the
// requested algorithm, pyas2-lib only the signature's digest.
type MICPreference int

const (
	// MICRequested uses the first supported signed-receipt-micalg, then the
	// signature's digest, then SHA-256 (RFC 4130 7.3).
	MICRequested MICPreference = iota
	// MICSignatureDigest uses the signature's digest when the message is
	// signed, else the first supported requested algorithm, else SHA-256.
	MICSignatureDigest
)

// chooseMIC picks the algorithm and its wire spelling.
func chooseMIC(pref MICPreference, opts DispositionOptions, signer cms.DigestAlgorithm) (cms.DigestAlgorithm, string) {
	req, haveReq := opts.FirstSupportedMIC()
	switch {
	case pref == MICSignatureDigest && signer != "":
		if haveReq && req.Algorithm == signer {
			return signer, req.Name
		}
		return signer, ""
	case haveReq:
		return req.Algorithm, req.Name
	case signer != "":
		return signer, ""
	}
	return cms.SHA256, ""
}
