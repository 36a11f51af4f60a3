package receiver

import (
	"regexp"
	"strings"

	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// micRule is how the algorithm of our MDN's MIC is chosen when the partner signs with one
// digest and asks for a MIC with another. No single rule satisfies every product:
// OpenAS2 accepts only a MIC with the requested algorithm, pyas2-lib only one with its
// signature's digest.
type micRule struct {
	pref mime.MICPreference
	// why says which rule applies and, for auto, what recognised the product.
	why string
}

// sender is an AS2 product whose MIC rule is known.
type sender struct {
	name string
	pref mime.MICPreference
	// clue says what recognised it, for the record.
	clue string
}

// pythonMessageID is the shape of a Message-ID made by Python's email.utils.make_msgid,
// which pyas2-lib uses: "<time.pid.random@host>".
var pythonMessageID = regexp.MustCompile(`^<\d+\.\d+\.\d+@[^>]+>$`)

// recogniseSender names the product that sent a request from its header fields: the
// User-Agent (or Server) where it sends one, else the marks pyas2-lib is known by (no
// User-Agent or a Python HTTP library's, AS2-Version 1.2, a signed-receipt-micalg in Python's hashlib spelling such
// as "sha256", and a Message-ID made by Python). ok is false when nothing recognises it.
func recogniseSender(env envelope) (sender, bool) {
	software := strings.ToLower(env.software)
	switch {
	case strings.Contains(software, "openas2"):
		return sender{name: "OpenAS2", pref: mime.MICRequested, clue: "its User-Agent"}, true
	case strings.Contains(software, "pyas2"):
		return sender{name: "pyas2", pref: mime.MICSignatureDigest, clue: "its User-Agent"}, true
	case (software == "" || pythonHTTPLibrary(software)) && env.version == "1.2" && hashlibMICSpelling(env.options) && pythonMessageID.MatchString(env.messageID):
		ua := "no User-Agent"
		if software != "" {
			ua = "User-Agent " + env.software + " of a Python HTTP library"
		}
		return sender{name: "pyas2-lib", pref: mime.MICSignatureDigest,
			clue: "its headers (" + ua + ", AS2-Version 1.2, " + env.options.MICAlgorithms[0].Name + " in signed-receipt-micalg, a Python Message-ID)"}, true
	}
	return sender{}, false
}

// pythonHTTPLibrary reports a (lower-cased) User-Agent of a Python HTTP client library.
// pyas2-lib builds messages but leaves the HTTP to the application, which names its
// library rather than a product: django-pyas2 posts with requests, small wrappers with
// urllib or httpx.
func pythonHTTPLibrary(software string) bool {
	for _, p := range []string{"python-requests/", "python-urllib/", "python-httpx/"} {
		if strings.HasPrefix(software, p) {
			return true
		}
	}
	return false
}

// hashlibMICSpelling reports a signed-receipt-micalg written as Python's hashlib names
// its digests ("sha256"), where RFC 5751 writes "sha-256".
func hashlibMICSpelling(o mime.DispositionOptions) bool {
	if len(o.MICAlgorithms) == 0 {
		return false
	}
	for _, m := range o.MICAlgorithms {
		n := strings.ToLower(m.Name)
		if !strings.HasPrefix(n, "sha") || strings.Contains(n, "-") {
			return false
		}
	}
	return true
}

// chooseMICRule applies the partner profile's mic_preference to a request.
func chooseMICRule(p profile.MICPreference, env envelope) micRule {
	switch p {
	case profile.MICPreferRequested:
		return micRule{pref: mime.MICRequested, why: "requested algorithm (partner profile: requested)"}
	case profile.MICPreferSignature:
		return micRule{pref: mime.MICSignatureDigest, why: "signature's digest (partner profile: signature)"}
	}
	s, ok := recogniseSender(env)
	if !ok {
		return micRule{pref: mime.MICRequested, why: "requested algorithm (auto: no known product recognised)"}
	}
	what := "requested algorithm"
	if s.pref == mime.MICSignatureDigest {
		what = "signature's digest"
	}
	return micRule{pref: s.pref, why: what + " (auto: " + s.name + " recognised by " + s.clue + ")"}
}

// micRuleText is what the record keeps of the rule: empty when no MIC was computed, and
// whether the rule decided anything, i.e. whether the signature's digest and the
// requested algorithm differ.
func micRuleText(rule micRule, res *mime.Result) string {
	if len(res.MIC.Digest) == 0 {
		return ""
	}
	req, ok := res.DispositionOptions.FirstSupportedMIC()
	if res.Signer == nil || !ok || req.Algorithm == res.Signer.Digest {
		return rule.why + "; no conflict"
	}
	return rule.why + "; signed with " + res.Signer.Digest.MICName() + ", " + req.Name + " requested"
}
