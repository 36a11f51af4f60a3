package as2test

import "strings"

// CorpusTolerances are the notes the gateway records for a corpus case whose
// key transport or signature algorithm leaves out the parameters the standard
// requires (cases.json's expected.key_transport and signature_algorithm), in
// layer order: the envelope's, then the signature's. The PSS signatures of
// the corpus use SHA-256 and the longest salt of an RSA-2048 key.
func CorpusTolerances(keyTransport, signatureAlgorithm string) []string {
	var notes []string
	if strings.HasPrefix(keyTransport, "rsaesOaep, parameters absent") {
		notes = append(notes, "RSAES-OAEP parameters absent: decrypted with the RFC 4055 defaults (SHA-1, MGF1 with SHA-1)")
	}
	if strings.HasPrefix(signatureAlgorithm, "rsassaPss, parameters absent") {
		notes = append(notes, "RSASSA-PSS parameters absent: verified as SHA-256, salt 222")
	}
	return notes
}
