package receiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/product"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// mdnSpec is what an MDN says and how it is signed.
type mdnSpec struct {
	ourID, partnerID  string
	originalMessageID string
	disposition       mime.Disposition
	// mic is nil for a failure: a refused message's content is not acknowledged.
	mic *mime.MIC
	// sign, when set, signs the MDN with digest.
	sign   *mime.Signer
	digest cms.DigestAlgorithm
}

// builtMDN is an MDN ready for the wire.
type builtMDN struct {
	messageID   string
	contentType string
	body        []byte
}

func (rc *Receiver) buildMDN(spec mdnSpec) (builtMDN, error) {
	opts := mime.MDNBuildOptions{}
	if spec.sign != nil {
		s := *spec.sign
		if spec.digest != "" {
			s.Digest = spec.digest
		}
		opts.Sign = &s
	}
	ct, body, err := mime.BuildMDN(mime.MDN{
		ReportingUA:        rc.reportingUA(),
		OriginalRecipient:  spec.ourID,
		FinalRecipient:     spec.ourID,
		OriginalMessageID:  spec.originalMessageID,
		Disposition:        spec.disposition,
		ReceivedContentMIC: spec.mic,
	}, opts)
	if err != nil {
		return builtMDN{}, fmt.Errorf("build MDN for %s: %w", spec.originalMessageID, err)
	}
	return builtMDN{messageID: rc.newMDNMessageID(spec.ourID), contentType: ct, body: body}, nil
}

// reportingUA is the Reporting-UA field (RFC 8098 3.2.1): the gateway's public host name,
// when known, and the product.
func (rc *Receiver) reportingUA() string {
	if rc.host == "" {
		return rc.productName()
	}
	return rc.host + "; " + rc.productName()
}

// productName names us in the MDNs we write, the header fields that carry them and the
// Server field of every answer, per the hide_version setting.
func (rc *Receiver) productName() string {
	if rc.deps.Product == nil {
		return product.String(false)
	}
	return rc.deps.Product()
}

// serverHeader names us in the Server field of every answer, refusals included.
func (rc *Receiver) serverHeader(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", rc.productName())
		h.ServeHTTP(w, r)
	})
}

// newMDNMessageID makes a Message-ID for an MDN we send, in the domain of the gateway's
// public host, else of our AS2 id.
func (rc *Receiver) newMDNMessageID(ourID string) string {
	host := rc.host
	if host == "" {
		host = ourID
	}
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, host)
	return "<mdn-" + newToken() + "@" + host + ">"
}

// mdnSignDigest chooses the digest of our MDN signature: the first algorithm the partner
// requested for the MIC, which is also how products verify it, unless that is SHA-1; then
// the signer's own.
func mdnSignDigest(opts mime.DispositionOptions, signer *mime.Signer) cms.DigestAlgorithm {
	if req, ok := opts.FirstSupportedMIC(); ok && !req.Algorithm.Weak() {
		return req.Algorithm
	}
	if signer != nil && signer.Digest != "" && !signer.Digest.Weak() {
		return signer.Digest
	}
	return cms.SHA256
}

// rowMDN builds the MDN a row records: its disposition and MIC, signed when sign is
// set.
func (rc *Receiver) rowMDN(row *inboundRow, sign *mime.Signer) (builtMDN, error) {
	disp, err := mime.ParseDisposition(row.Disposition)
	if err != nil {
		return builtMDN{}, fmt.Errorf("AS2 message row %d: %w", row.ID, err)
	}
	spec := mdnSpec{
		ourID:             row.AS2To,
		partnerID:         row.AS2From,
		originalMessageID: row.AS2MessageID,
		disposition:       disp,
		sign:              sign,
	}
	if row.MIC != "" {
		mic, err := mime.ParseMIC(row.MIC + ", " + row.MICAlgorithm)
		if err != nil {
			return builtMDN{}, fmt.Errorf("AS2 message row %d: %w", row.ID, err)
		}
		spec.mic = &mic
	}
	if row.MDNSignDigest != "" {
		if spec.digest, err = cms.ParseDigestAlgorithm(row.MDNSignDigest); err != nil {
			return builtMDN{}, fmt.Errorf("AS2 message row %d: %w", row.ID, err)
		}
	}
	return rc.buildMDN(spec)
}

// setMDNHeaders writes the header fields of an MDN, as the HTTP response of a
// synchronous one or the request of an asynchronous one.
func setMDNHeaders(h http.Header, contentType, ourID, partnerID, messageID, product string, now time.Time) {
	h.Set("Content-Type", contentType)
	h.Set("Mime-Version", "1.0")
	h.Set("AS2-Version", "1.2")
	h.Set("AS2-From", quoteAS2ID(ourID))
	h.Set("AS2-To", quoteAS2ID(partnerID))
	h.Set("Message-ID", messageID)
	h.Set("Date", now.UTC().Format(http.TimeFormat))
	h.Set("Subject", "Message Disposition Notification")
	// A repeated Message-ID gets its first MDN again, byte for byte (RFC 6017's
	// AS2-Reliability); nothing else of the registered features is claimed.
	h.Set("EDIINT-Features", "AS2-Reliability")
	h.Set("User-Agent", product)
}

// writeMDN answers a synchronous MDN.
func writeMDN(w http.ResponseWriter, row *inboundRow, product string, now time.Time) {
	setMDNHeaders(w.Header(), row.MDNContentType, row.AS2To, row.AS2From, row.MDNMessageID, product, now)
	w.Header().Set("Content-Length", fmt.Sprint(len(row.MDNBody)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(row.MDNBody)
}

// receiptEntity is an MDN as the receipt stage keeps it: the MIME entity, its
// Content-Type and Message-ID included, so the stored receipt opens as it was sent and
// the MDN can be read back from it byte for byte.
func receiptEntity(mdn builtMDN) []byte {
	var entity bytes.Buffer
	entity.Grow(len(mdn.body) + len(mdn.contentType) + len(mdn.messageID) + 32)
	fmt.Fprintf(&entity, "Content-Type: %s\r\nMessage-ID: %s\r\n\r\n", mdn.contentType, mdn.messageID)
	entity.Write(mdn.body)
	return entity.Bytes()
}

// maxReceipt bounds a stored receipt read back: an MDN is a report and a signature.
const maxReceipt = 1 << 20

// storedReceipt reads back the MDN stored with a message as its receipt stage; an error
// wrapping persistence.ErrNotFound when it has none.
func (rc *Receiver) storedReceipt(ctx context.Context, messageID int64) (builtMDN, error) {
	p, err := rc.deps.Store.GetPayload(ctx, messageID, persistence.PayloadReceipt)
	if err != nil {
		return builtMDN{}, fmt.Errorf("look up receipt: %w", err)
	}
	r, err := rc.deps.Blobs.Open(ctx, p.Key)
	if err != nil {
		return builtMDN{}, fmt.Errorf("open receipt: %w", err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxReceipt))
	if err != nil {
		return builtMDN{}, fmt.Errorf("read receipt: %w", err)
	}
	e, err := mime.ParseEntity(data)
	if err != nil {
		return builtMDN{}, fmt.Errorf("read receipt: %w", err)
	}
	mdn := builtMDN{messageID: e.Header.Get("Message-Id"), contentType: e.Header.Get("Content-Type"), body: e.Body}
	if mdn.messageID == "" || mdn.contentType == "" {
		return builtMDN{}, errors.New("read receipt: no Content-Type or Message-ID")
	}
	return mdn, nil
}

// storeReceipt keeps the MDN of a message stored without one as its receipt stage. A
// receipt stored meanwhile is left as it is.
func (rc *Receiver) storeReceipt(ctx context.Context, messageID int64, mdn builtMDN) error {
	blob, err := rc.deps.Blobs.Put(ctx, messageID, persistence.PayloadReceipt, bytes.NewReader(receiptEntity(mdn)))
	if err != nil {
		return fmt.Errorf("store receipt: %w", err)
	}
	err = rc.deps.Store.AddPayload(ctx, persistence.Payload{
		MessageID: messageID,
		Stage:     persistence.PayloadReceipt,
		Key:       blob.Key,
		Size:      blob.Size,
		SHA256:    blob.SHA256,
		CreatedAt: rc.now().UTC(),
	})
	if errors.Is(err, persistence.ErrConflict) {
		return nil
	}
	if err != nil {
		if derr := rc.deps.Blobs.Delete(context.WithoutCancel(ctx), blob.Key); derr != nil {
			rc.log.WarnContext(ctx, "remove receipt that was not recorded", "err", derr)
		}
		return fmt.Errorf("record receipt: %w", err)
	}
	return nil
}
