package as2

import "strings"

// failureClass names what went wrong with an AS2 message, as the RFC 4130 disposition
// modifiers do, plus the sender's own findings about a receipt or the connection.
type failureClass string

const (
	failAuthentication failureClass = "authentication-failed"
	failDecryption     failureClass = "decryption-failed"
	failDecompression  failureClass = "decompression-failed"
	failIntegrity      failureClass = "integrity-check-failed"
	failSecurity       failureClass = "insufficient-message-security"
	failDuplicateDoc   failureClass = "duplicate-document"
	failDuplicateName  failureClass = "duplicate-filename"
	failUnexpected     failureClass = "unexpected-processing-error"
	failMIC            failureClass = "mic-mismatch"    // their receipt's MIC is not ours
	failNoReceipt      failureClass = "receipt-timeout" // no receipt before the deadline
	failHTTP           failureClass = "http-refused"    // their server answered 4xx or 5xx
	failUnreachable    failureClass = "unreachable"     // no answer at all
	failOther          failureClass = "other"           // a reason the table has no entry for
)

// side is who refused: the partner what we sent (outbound), or we what it sent (inbound).
type side int

const (
	outbound side = iota
	inbound
)

// advice is what a failure means and what fixes it, for each side: the failure table of
// docs/as2.md turned into sentences. problem follows "Refused by ACME: " (outbound) or
// "Refused: " (inbound); %s in a problem is the certificate it concerns.
type advice struct{ problem, fix string }

var adviceTable = map[failureClass][2]advice{
	failAuthentication: {
		outbound: {"they could not verify our signature — do they have our certificate %s?", "Send them our signing certificate from the organization's page (\"Our AS2 details\"), have them trust it, then redeliver."},
		inbound:  {"their signature did not verify with their certificates", "Ask which certificate they sign with, add it to the partner's certificates (or renew an expired one), and ask them to send again."},
	},
	failDecryption: {
		outbound: {"they could not decrypt what we sent, encrypted to their certificate %s", "Ask which certificate they decrypt with, put it among the partner's certificates, then redeliver."},
		inbound:  {"we could not decrypt it", "They encrypt to a certificate other than our decryption certificate: send them our current one (the organization's page), or during a key rollover set the previous decryption certificate."},
	},
	failDecompression: {
		outbound: {"they could not decompress what we sent", "Turn compression off for this partner, or switch its compression order, then redeliver."},
		inbound:  {"its compressed layer was broken or inflated past the limit", "Ask the partner to check its compression; a message larger than the size limit is refused by design."},
	},
	failIntegrity: {
		outbound: {"the content did not match its signature", "The message changed on the way or they read it differently; redeliver, and ask them for their logs if it happens again."},
		inbound:  {"its content did not match its signature", "The message changed on the way or was signed wrongly; ask the partner to send it again."},
	},
	failSecurity: {
		outbound: {"they demand signing or encryption we did not apply", "Turn on signing and encryption (and a SHA-2 digest) in the partner's AS2 profile, then redeliver."},
		inbound:  {"it was not signed or encrypted as the partner's profile demands", "Ask the partner to sign and encrypt, or relax \"require signed\", \"require encrypted\" or \"allow SHA-1\" in its AS2 profile if that is agreed."},
	},
	failDuplicateDoc: {
		outbound: {"they had this signature before (a replay)", "Redeliver as a new message, which signs it afresh."},
		inbound:  {"the same signature came before under another Message-ID (a replay)", "Nothing to do for a replay; a new document needs a new signature from the partner."},
	},
	failDuplicateName: {
		outbound: {"they had a file of this name before", "Send it under another file name, or ask them to accept repeated names."},
		inbound:  {"a file of this name came before", "Set the partner's duplicate file name rule to accept or warn, or ask for unique file names."},
	},
	failUnexpected: {
		outbound: {"their side failed processing it", "Ask the partner what its logs say, then redeliver."},
		inbound:  {"processing it failed on our side", "See the logs for this message; the partner may send it again once it is fixed."},
	},
	failMIC: {
		outbound: {"their receipt's MIC does not match what we sent", "They compute the MIC differently or hold other bytes: ask them for the MIC algorithm they sign with, or to try their MIC preference, then redeliver."},
	},
	failNoReceipt: {
		outbound: {"no receipt came before the deadline", "They may not reach our asynchronous MDN URL: set it to an address they reach, or ask for synchronous receipts."},
	},
	failHTTP: {
		outbound: {"their server refused the request", "Read their answer in the delivery's reason; check the endpoint URL and the size limits agreed."},
	},
	failUnreachable: {
		outbound: {"their server could not be reached", "Run the connection check on the partner's page (DNS, TCP, TLS, HTTP)."},
	},
}

// adviceFor is the problem and fix of a failure on a side, with cert (a certificate's
// subject and expiry, when the problem names one) filled in; ok false when the table has
// no sentence for it.
func adviceFor(c failureClass, s side, cert string) (advice, bool) {
	a, ok := adviceTable[c]
	if !ok || a[s].problem == "" {
		return advice{}, false
	}
	out := a[s]
	if cert == "" {
		cert = "(none set)"
	}
	out.problem = strings.Replace(out.problem, "%s", cert, 1)
	return out, true
}

// classOfDisposition reads the failure class from a disposition such as
// "automatic-action/MDN-sent-automatically; processed/error: authentication-failed".
func classOfDisposition(d string) (failureClass, bool) {
	i := strings.LastIndex(d, "processed/error:")
	if i < 0 {
		return "", false
	}
	c := failureClass(strings.ToLower(strings.TrimSpace(d[i+len("processed/error:"):])))
	if _, ok := adviceTable[c]; !ok {
		return failOther, true
	}
	return c, true
}
