package receiver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"wharf/internal/bodyrate"
	"wharf/internal/logging"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// exchange is one AS2 request being handled.
type exchange struct {
	r       *http.Request
	env     envelope
	in      profile.Inbound
	body    *requestBody
	payload *spoolFile // the document, when the body was opened in one pass
	headers []byte
	res     *mime.Result
	micRule micRule
}

// handleMessage takes one AS2 message: header fields and profiles first, then the body,
// then the layers, duplicate detection, storage and the MDN.
func (rc *Receiver) handleMessage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(rc.cfg.WriteTimeout))
	defer cancel()
	x := &exchange{r: r}
	var err error
	if x.env, err = readEnvelope(r.Header, r.ContentLength); err != nil {
		rc.refuseRequest(ctx, w, x, http.StatusBadRequest, err.Error(), nil)
		return
	}
	x.in, err = rc.deps.Directory.Inbound(ctx, x.env.from, x.env.to)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		rc.refuseRequest(ctx, w, x, http.StatusForbidden,
			fmt.Sprintf("no trading partner agreement from AS2-From %q to AS2-To %q", x.env.from, x.env.to), err)
		return
	case err != nil:
		rc.unavailable(ctx, w, x, "resolve AS2 profiles", err)
		return
	}
	partner := string(x.in.Remote.Partner)
	if !rc.admitPartner(w, r, partner) {
		return
	}
	defer rc.perPartner.release(partner)
	limit := rc.sizeLimit(x.in)
	if r.ContentLength > limit {
		rc.refuseRequest(ctx, w, x, http.StatusRequestEntityTooLarge, rc.tooLargeText(x.in, r.ContentLength), nil)
		return
	}
	if x.env.mode == MDNAsync {
		if x.env.asyncURL, err = checkAsyncURL(x.env.asyncURL, x.in.Remote); err != nil {
			rc.refuseRequest(ctx, w, x, http.StatusBadRequest, err.Error(), nil)
			return
		}
	}
	x.headers = headerText(r)
	x.micRule = chooseMICRule(x.in.Remote.MICPreference, x.env)
	defer func() {
		large := x.heldLarge()
		x.body.close()
		if x.payload != nil {
			x.payload.remove()
		}
		// Dropped before freeMemory is told, so its collection finds them garbage.
		x.body, x.res, x.payload = nil, nil, nil
		if large {
			rc.largeDone()
		}
	}()
	bodyErr, err := rc.receive(ctx, x, limit, mime.UnpackOptions{
		Decryption:            x.in.Decryption,
		PartnerCertificates:   x.in.PartnerCertificates,
		AllowSHA1:             x.in.Remote.AllowSHA1,
		VerifyTime:            rc.now(),
		MaxDecompressedSize:   limit,
		MaxDecompressionRatio: rc.cfg.MaxDecompressionRatio,
		RequireSigned:         x.in.Remote.RequireSigned,
		RequireEncrypted:      x.in.Remote.RequireEncrypted,
		MICPreference:         x.micRule.pref,
		TempDir:               rc.tempDir,
		MaxAEADSize:           rc.maxAEAD,
	})
	var storageErr *bodyStorageError
	switch {
	case bodyErr == nil:
	case errors.Is(bodyErr, errBodyTooLarge):
		rc.refuseRequest(ctx, w, x, http.StatusRequestEntityTooLarge, rc.tooLargeText(x.in, 0), nil)
		return
	case errors.As(bodyErr, &storageErr):
		rc.unavailable(ctx, w, x, "keep the request body", bodyErr)
		return
	case errors.Is(bodyErr, bodyrate.ErrTooSlow):
		rc.refuseRequest(ctx, w, x, http.StatusRequestTimeout, rc.tooSlowText(), bodyErr)
		return
	default:
		rc.refuseRequest(ctx, w, x, http.StatusBadRequest, "the request body could not be read to its end", bodyErr)
		return
	}
	if errors.Is(err, mime.ErrIO) {
		rc.unavailable(ctx, w, x, "open the AS2 message", err)
		return
	}
	if err != nil {
		var layers []mime.Layer
		if x.res != nil {
			layers = x.res.Layers
		}
		rc.refuseMessage(ctx, w, x, failureDisposition(err, layers), err)
		return
	}
	row := rc.newRow(x)
	outcome, existing, err := reserve(ctx, rc.rows, &row, duplicateFilenameCheck{
		refuse: x.in.Remote.DuplicateFilename == profile.DuplicateRefuse,
		warn:   x.in.Remote.DuplicateFilename == profile.DuplicateWarn,
		window: time.Duration(x.in.Remote.DuplicateFilenameWindowH) * time.Hour,
	}, contentCheck(x.in.Remote))
	if err != nil {
		rc.unavailable(ctx, w, x, "reserve the AS2 message", err)
		return
	}
	switch outcome {
	case duplicate:
		rc.takeDuplicate(ctx, w, x, existing)
	case replay:
		rc.refuseMessage(ctx, w, x, failureDisposition(errReplay, nil),
			fmt.Errorf("%w (AS2 message %s from %s)", errReplay, existing.AS2MessageID, existing.AS2From))
	case duplicateFilename:
		rc.refuseMessage(ctx, w, x, failureDisposition(errDuplicateFilename, nil),
			fmt.Errorf("%w: %q within %d hours", errDuplicateFilename, row.FileName, x.in.Remote.DuplicateFilenameWindowH))
	case repeat:
		rc.takeRepeat(ctx, w, x, &row, existing)
	case repeatBusy:
		rc.busy(ctx, w, x, "the same document is being processed under another Message-ID; send it again later")
	default:
		rc.take(ctx, w, x, &row, false)
		rc.noteWarnedRepeat(ctx, &row, existing)
	}
}

// sizeLimit is the smaller of the two profiles' limits, else the config's.
func (rc *Receiver) sizeLimit(in profile.Inbound) int64 {
	mib, _ := rc.sizeLimitMiB(in)
	return int64(mib) << 20
}

// sizeLimitMiB is the body limit in MiB and the setting it comes from: the smaller of the
// two profiles' max_message_size_mib, else the receiver's max_body_mib.
func (rc *Receiver) sizeLimitMiB(in profile.Inbound) (int, string) {
	mib, from := 0, ""
	for _, l := range []struct {
		v    int
		from string
	}{
		{in.Local.MaxMessageSizeMiB, "max_message_size_mib of our AS2 profile"},
		{in.Remote.MaxMessageSizeMiB, "max_message_size_mib of the partner's AS2 profile"},
	} {
		if l.v > 0 && (mib == 0 || l.v < mib) {
			mib, from = l.v, l.from
		}
	}
	if mib == 0 {
		return rc.cfg.MaxBodyMiB, "max_body_mib of the receiver"
	}
	return mib, from
}

// tooLargeText is the answer to a body over the limit: it names the limit and where it is
// set, so the sender's operator learns what to agree on rather than a bare 413.
func (rc *Receiver) tooLargeText(in profile.Inbound, size int64) string {
	mib, from := rc.sizeLimitMiB(in)
	if size > 0 {
		return fmt.Sprintf("the message of %d bytes is larger than the limit of %d MiB accepted from this partner (%s)", size, mib, from)
	}
	return fmt.Sprintf("the message is larger than the limit of %d MiB accepted from this partner (%s)", mib, from)
}

// newRow describes an unpacked message for as2_inbound.
func (rc *Receiver) newRow(x *exchange) inboundRow {
	res, env := x.res, x.env
	row := inboundRow{
		Instance:        rc.name,
		AS2From:         string(env.from),
		AS2To:           string(env.to),
		AS2MessageID:    env.messageID,
		AS2Version:      env.version,
		Partner:         string(x.in.Remote.Partner),
		Organization:    string(x.in.Local.Organization),
		ClaimToken:      newToken(),
		FileName:        string(res.FileName),
		FileNameSent:    res.FileName != "",
		Disposition:     mime.Processed().String(),
		MDNMode:         env.mode,
		MDNSigned:       env.signedReceipt() && x.in.Signer != nil,
		MDNURL:          env.asyncURL,
		PartnerSoftware: env.software,
		EDIINTFeatures:  env.features,
	}
	// The document's digest is only for comparing repeats, so a partner whose profile
	// accepts them (the default) costs no second pass over the payload besides the core's.
	if x.in.Remote.DuplicateContent != profile.DuplicateAccept {
		row.ContentSHA256 = contentDigest(res.Payload)
		if x.payload != nil {
			row.ContentSHA256 = hex.EncodeToString(x.payload.sum.Sum(nil)) // taken as it was spooled
		}
	}
	if !row.FileNameSent {
		row.FileName = string(fileNameFromMessageID(env.messageID))
	}
	layers := make([]string, len(res.Layers))
	for i, l := range res.Layers {
		layers[i] = string(l)
	}
	row.Layers = strings.Join(layers, ",")
	if d := res.Decryption; d != nil {
		row.Cipher, row.KeyTransport = string(d.Cipher), string(d.KeyTransport)
	}
	if s := res.Signer; s != nil {
		row.SignatureAlg, row.SignatureScheme = string(s.Digest), string(s.Scheme)
		row.SignatureDigest = signatureDigest(s)
	}
	row.Tolerances = strings.Join(res.Tolerances(), "\n")
	if len(res.MIC.Digest) > 0 {
		row.MIC, row.MICAlgorithm = base64.StdEncoding.EncodeToString(res.MIC.Digest), res.MIC.AlgorithmName()
		row.MICRule = micRuleText(x.micRule, res)
	}
	if row.MDNSigned {
		row.MDNSignDigest = string(mdnSignDigest(env.options, x.in.Signer))
	}
	return row
}

// signatureDigest identifies a signing act for replay detection: SHA-256 over the
// signer's certificate and the signature's ReplayDigest (the digest of its signed
// attributes, which hold the content digest and the signing time). For the RSA PKCS #1
// v1.5 signatures AS2 products make this is as distinctive as the signature value
// itself, and unlike the digest of the attributes alone it does not let two partners
// who sign the same content in the same second collide.
func signatureDigest(s *cms.SignerInfo) string {
	if len(s.ReplayDigest) == 0 || s.Certificate == nil {
		return ""
	}
	h := sha256.New()
	h.Write(s.Certificate.Raw)
	h.Write(s.ReplayDigest)
	return hex.EncodeToString(h.Sum(nil))
}

// fileNameFromMessageID names a document the partner sent without a file name: its
// Message-ID with anything but letters, digits, dot, dash and underscore replaced.
func fileNameFromMessageID(id string) persistence.FileName {
	s := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' {
			return r
		}
		return '_'
	}, strings.Trim(strings.TrimSpace(id), "<>"))
	s = strings.Trim(s, "._")
	if len(s) > 200 {
		s = s[:200]
	}
	if s == "" {
		s = "as2-message"
	}
	return persistence.FileName(s)
}

// take stores a message whose row we own together with its MDN, answers the MDN and
// records both on the row. takeover is set when an earlier attempt may have stored the
// message before it was interrupted.
func (rc *Receiver) take(ctx context.Context, w http.ResponseWriter, x *exchange, row *inboundRow, takeover bool) {
	stop := rc.holdReservation(ctx, row)
	defer stop()
	var (
		msg    persistence.Message
		mdn    builtMDN
		mdnErr error
		found  bool // stored by an earlier attempt, with the MDN it wrote
		err    error
	)
	if takeover {
		msg, err = rc.findStored(ctx, row)
		switch {
		case err == nil:
			found = true
		case errors.Is(err, persistence.ErrNotFound):
			err = nil
		default:
			err = fmt.Errorf("look up message: %w", err)
		}
	}
	if err == nil && !found {
		// The MDN depends on nothing the store decides, so it is written first and
		// stored with the message, in the same flush and transaction.
		var receipt []byte
		if row.MDNMode != MDNNone {
			if mdn, mdnErr = rc.rowMDN(row, mdnSigner(row, x.in.Signer)); mdnErr == nil {
				receipt = receiptEntity(mdn)
			}
		}
		msg, err = rc.store(ctx, x, row, receipt)
	}
	if err != nil {
		if rerr := release(context.WithoutCancel(ctx), rc.deps.DB, *row); rerr != nil {
			rc.log.ErrorContext(ctx, "release AS2 reservation", "as2_message_id", row.AS2MessageID, "err", rerr)
		}
		var refused *refusedItem
		if errors.As(err, &refused) {
			rc.refuseMessage(ctx, w, x, mime.ProcessedWith("error", unexpectedFailure), err)
			return
		}
		rc.unavailable(ctx, w, x, "store the AS2 message", err)
		return
	}
	// The message is durable: what follows no longer depends on the partner staying
	// connected.
	ctx, cancel := context.WithTimeout(logging.WithMessage(context.WithoutCancel(ctx), msg.ID, msg.CorrelationID), finishTimeout)
	defer cancel()
	row.MessageID = msg.ID
	switch {
	case found:
		err = rc.completeStored(ctx, row, func(context.Context) (*mime.Signer, error) { return x.in.Signer, nil })
	case mdnErr != nil:
		err = mdnErr
	default:
		err = rc.record(ctx, row, mdn)
	}
	if err != nil {
		// The message is stored; the background loop writes its MDN once the
		// reservation is stale, and a resend of the message gets it.
		rc.log.ErrorContext(ctx, "AS2 message stored but its MDN could not be written", "as2_message_id", row.AS2MessageID, "err", err)
		http.Error(w, "the message was stored but its MDN could not be written; send it again later for the MDN", http.StatusInternalServerError)
		return
	}
	rc.log.InfoContext(ctx, "AS2 message received", "as2_message_id", row.AS2MessageID, "as2_from", row.AS2From,
		"as2_to", row.AS2To, "layers", row.Layers, "disposition", row.Disposition, "mdn", string(row.MDNMode))
	// The row is answered: the partner reading the MDN, however slowly, holds nothing.
	stop()
	rc.respond(ctx, w, x, row, true)
}

// finishTimeout bounds recording the MDN of a stored message.
const finishTimeout = 2 * time.Minute

// refusedItem is a message the core would not take (a party the profile names is gone).
type refusedItem struct{ err error }

func (e *refusedItem) Error() string { return "the gateway refused the message: " + e.err.Error() }
func (e *refusedItem) Unwrap() error { return e.err }

// store ingests the message with its receipt stage (nil when there is no MDN to keep).
// It returns when the message is durable.
func (rc *Receiver) store(ctx context.Context, x *exchange, row *inboundRow, receipt []byte) (persistence.Message, error) {
	extra := []module.ExtraPayload{
		{Stage: persistence.PayloadReceived, Body: x.body.reader()},
		{Stage: persistence.PayloadHeaders, Body: bytes.NewReader(x.headers)},
	}
	if receipt != nil {
		extra = append(extra, module.ExtraPayload{Stage: persistence.PayloadReceipt, Body: bytes.NewReader(receipt)})
	}
	corr, origin, problem := provenance(x.in.Remote, x.r.Header, row.AS2MessageID)
	if problem != "" {
		rc.log.WarnContext(ctx, "correlation header not used", "as2_message_id", row.AS2MessageID, "problem", problem)
	}
	results, err := rc.deps.Ingest.Ingest(ctx, []module.Incoming{{
		Source:        row.Instance,
		From:          persistence.PartyName(row.Partner),
		To:            persistence.PartyName(row.Organization),
		FileName:      persistence.FileName(row.FileName),
		Body:          x.document(),
		CorrelationID: corr,
		OriginEventID: origin,
		Metadata:      headerMetadata(x.r.Header),
		Extra:         extra,
	}})
	if err != nil {
		// The batch may have committed before the error reached us (a lost
		// connection); releasing the row then would let a resend be stored twice.
		if msg, ferr := rc.findStored(context.WithoutCancel(ctx), row); ferr == nil {
			return msg, nil
		}
		return persistence.Message{}, err
	}
	if len(results) != 1 {
		return persistence.Message{}, fmt.Errorf("ingest returned %d results for one message", len(results))
	}
	if results[0].Err != nil {
		return persistence.Message{}, &refusedItem{results[0].Err}
	}
	return results[0].Message, nil
}

// findStored finds the message an earlier attempt stored for the row: the instance's
// message with the Message-ID as origin event id, from the row's partner (two partners
// may use the same Message-ID).
func (rc *Receiver) findStored(ctx context.Context, row *inboundRow) (persistence.Message, error) {
	msg, err := rc.deps.Store.FindMessageByOrigin(ctx, row.Instance, cutID(row.AS2MessageID))
	if err != nil {
		return persistence.Message{}, err
	}
	if string(msg.From) != row.Partner || string(msg.To) != row.Organization {
		return persistence.Message{}, fmt.Errorf("message of AS2 Message-ID %s from %s: %w", row.AS2MessageID, row.Partner, persistence.ErrNotFound)
	}
	return msg, nil
}

// mdnSigner is the signer of a row's MDN: ours when the partner asked for a signed one.
func mdnSigner(row *inboundRow, signer *mime.Signer) *mime.Signer {
	if row.MDNSigned {
		return signer
	}
	return nil
}

// record marks a reserved row we own answered, naming its stored message and the MDN
// (queuing the MDN's job when asynchronous), in one transaction.
func (rc *Receiver) record(ctx context.Context, row *inboundRow, mdn builtMDN) error {
	var job *mdnJob
	if row.MDNMode != MDNNone {
		row.MDNMessageID, row.MDNContentType, row.MDNBody = mdn.messageID, mdn.contentType, mdn.body
		if row.MDNMode == MDNAsync {
			job = &mdnJob{
				Instance:     row.Instance,
				URL:          row.MDNURL,
				AS2From:      row.AS2To,
				AS2To:        row.AS2From,
				MDNMessageID: row.MDNMessageID,
				ContentType:  row.MDNContentType,
				Body:         row.MDNBody,
			}
		}
	}
	ok, err := answer(ctx, rc.rows, row, job)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("the reservation was taken over meanwhile")
	}
	if job != nil {
		rc.kick()
	}
	return nil
}

// completeStored records a row whose message an interrupted attempt stored. Its MDN is
// the receipt stored with the message, so the row and every resend carry the same
// bytes; when the attempt stored none (writing it failed), one is written now and kept
// as the receipt. signer is asked for only then.
func (rc *Receiver) completeStored(ctx context.Context, row *inboundRow, signer func(context.Context) (*mime.Signer, error)) error {
	var mdn builtMDN
	if row.MDNMode != MDNNone {
		var err error
		mdn, err = rc.storedReceipt(ctx, row.MessageID)
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			var sign *mime.Signer
			if row.MDNSigned {
				if sign, err = signer(ctx); err != nil {
					return err
				}
			}
			if mdn, err = rc.rowMDN(row, sign); err != nil {
				return err
			}
			if err := rc.storeReceipt(ctx, row.MessageID, mdn); err != nil {
				// The MDN is still answered: the message is durable, and the MDN
				// stays on the row for duplicates.
				rc.log.WarnContext(ctx, "MDN not kept as the receipt stage", "as2_message_id", row.AS2MessageID, "err", err)
			}
		case err != nil:
			return err
		}
	}
	return rc.record(ctx, row, mdn)
}

// respond answers the request x for a stored message: its MDN in the mode x asks for.
// fresh is set for the request that stored it, whose asynchronous MDN complete already
// queued; a duplicate asking for an asynchronous MDN gets the same MDN queued again.
func (rc *Receiver) respond(ctx context.Context, w http.ResponseWriter, x *exchange, row *inboundRow, fresh bool) {
	if x.env.mode != MDNNone && row.MDNBody == nil {
		// The first copy asked for no MDN; this one does. It is kept, so later copies
		// get the same bytes.
		var sign *mime.Signer
		if x.env.signedReceipt() {
			sign = x.in.Signer
			row.MDNSignDigest = string(mdnSignDigest(x.env.options, sign))
		}
		mdn, err := rc.rowMDN(row, sign)
		if err != nil {
			rc.log.ErrorContext(ctx, "write MDN for a duplicate", "as2_message_id", row.AS2MessageID, "err", err)
			http.Error(w, "the MDN could not be written", http.StatusInternalServerError)
			return
		}
		row.MDNMessageID, row.MDNContentType, row.MDNBody = mdn.messageID, mdn.contentType, mdn.body
		if err := saveMDN(ctx, rc.deps.DB, row); err != nil {
			rc.log.WarnContext(ctx, "MDN of a duplicate not kept", "as2_message_id", row.AS2MessageID, "err", err)
		}
	}
	switch x.env.mode {
	case MDNSync:
		writeMDN(w, row, rc.productName(), rc.now())
	case MDNAsync:
		if !fresh || row.MDNMode != MDNAsync {
			job := &mdnJob{
				Instance:     rc.name,
				InboundID:    row.ID,
				URL:          x.env.asyncURL,
				AS2From:      row.AS2To,
				AS2To:        row.AS2From,
				MDNMessageID: row.MDNMessageID,
				ContentType:  row.MDNContentType,
				Body:         row.MDNBody,
			}
			if err := queueJob(ctx, rc.deps.DB, job); err != nil {
				rc.unavailable(ctx, w, x, "queue the asynchronous MDN", err)
				return
			}
			rc.kick()
		}
		textAnswer(w, http.StatusOK, "The message was received; its MDN follows asynchronously.")
	default:
		textAnswer(w, http.StatusOK, "The message was received.")
	}
}

// heldLarge reports whether the request held a large message in memory, which is worth
// returning to the system: a body read whole, a document unpacked in memory, or AES-GCM
// content (opened only whole). A body opened in one pass held none of it.
func (x *exchange) heldLarge() bool {
	if x.body == nil {
		return false
	}
	if x.body.file == nil && x.body.size > freeAbove {
		return true
	}
	if x.res == nil {
		return false
	}
	gcm := x.res.Decryption != nil && x.res.Decryption.Cipher.AEAD()
	return int64(len(x.res.Payload)) > freeAbove || gcm && x.body.size > freeAbove
}
