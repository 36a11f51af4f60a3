package mime

import (
	"testing"
	"time"

	"wharf/internal/protocol/as2/as2test"
)

// corpusTime lies inside the validity of the corpus certificates.
var corpusTime = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)

type corpusCase struct {
	ID                string            `json:"id"`
	Group             string            `json:"group"`
	MessageID         string            `json:"message_id"`
	SenderCertificate string            `json:"sender_certificate"`
	PeerCertificate   string            `json:"peer_certificate"`
	Files             map[string]string `json:"files"`
	LayerDetails      []struct {
		Layer                  string `json:"layer"`
		Cipher                 string `json:"cipher"`
		CMSAlgorithmProtection *bool  `json:"cms_algorithm_protection"`
	} `json:"layer_details"`
	Expected struct {
		Signed            bool     `json:"signed"`
		Encrypted         bool     `json:"encrypted"`
		Compressed        bool     `json:"compressed"`
		Layers            []string `json:"layers"`
		Filename          *string  `json:"filename"`
		MIC               string   `json:"mic"`
		MICAlgorithm      string   `json:"mic_algorithm"`
		Disposition       string   `json:"disposition"`
		OriginalMessageID string   `json:"original_message_id"`
		// MICIfHeadersIncluded is a wrong MIC the partner rejects (compressed only).
		MICIfHeadersIncluded *micValue `json:"mic_if_headers_included"`
		KeyTransport         string    `json:"key_transport"`
		SignatureAlgorithm   string    `json:"signature_algorithm"`
		MICAlgorithmConflict *struct {
			SignatureDigest      micValue `json:"signature_digest"`
			FirstRequestedMICAlg micValue `json:"first_requested_micalg"`
			ThisPeerRequires     string   `json:"this_peer_requires"`
		} `json:"mic_algorithm_conflict"`
	} `json:"expected"`
	MDN struct {
		Signed                   bool    `json:"signed"`
		Disposition              string  `json:"disposition"`
		MIC                      *string `json:"mic"`
		SignatureDigestAlgorithm *string `json:"signature_digest_algorithm"`
		// MICCovers is request_body where the product could not open the message and
		// hashed the body as it arrived (ob-11: AES-GCM).
		MICCovers string `json:"mic_covers"`
	} `json:"mdn"`
}

type micValue struct {
	MIC          string `json:"mic"`
	MICAlgorithm string `json:"mic_algorithm"`
}

func loadCorpus(t testing.TB) (string, []corpusCase) {
	var cases []corpusCase
	dir := as2test.CorpusCases(t, &cases)
	return dir, cases
}
