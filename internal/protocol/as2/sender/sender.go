package sender

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"wharf/internal/alert"
	"wharf/internal/delivery"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/product"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
	"wharf/internal/storage"
	"wharf/internal/telemetry"
)

// Deps is what the sender and the MDN intake need of the gateway; the AS2 module's
// runtime builds it once.
type Deps struct {
	Directory profile.Directory
	// DB holds the module's tables (as2_outbound).
	DB     module.SQL
	Blobs  module.Blobs
	Store  persistence.Store
	Logger *slog.Logger
	// BaseURL is the gateway's public URL; its host is the default Message-ID domain.
	BaseURL string
	// AsyncMDNURL returns where partners post async MDNs for the organization's messages
	// (the receiver's MDN path under its public address), used when a remote profile names
	// no async_mdn_url. It is not derived from BaseURL, which is the API's address. Nil,
	// or an empty answer, leaves async MDNs to profiles that name a URL.
	AsyncMDNURL func(org string) string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Telemetry traces each POST to a partner and sends it the traceparent; nil
	// traces nothing.
	Telemetry *telemetry.Telemetry
	// Alerts takes the intake's async_mdn_failed alerts; nil means alert.Discard.
	Alerts alert.Raiser
	// Product returns the product string for User-Agent; nil shows the version.
	Product func() string
	// TempDir holds the bodies of large messages built ahead of sending, for partners
	// whose profile says chunked never; empty means os.TempDir().
	TempDir string
}

// core is what the sender and the intake share.
type core struct {
	dir    profile.Directory
	db     module.SQL
	blobs  module.Blobs
	store  persistence.Store
	log    *slog.Logger
	now    func() time.Time
	alerts alert.Raiser
}

func newCore(deps Deps) (*core, error) {
	switch {
	case deps.Directory == nil:
		return nil, errors.New("as2-sender: no profile directory")
	case deps.DB == nil:
		return nil, errors.New("as2-sender: no database")
	case deps.Blobs == nil:
		return nil, errors.New("as2-sender: no payload storage")
	case deps.Store == nil:
		return nil, errors.New("as2-sender: no store")
	}
	c := &core{dir: deps.Directory, db: deps.DB, blobs: deps.Blobs, store: deps.Store, log: deps.Logger, now: deps.Now, alerts: deps.Alerts}
	if c.alerts == nil {
		c.alerts = alert.Discard
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// expectation is what rec's receipt is judged against, with the partner's current
// certificates.
func (c *core) expectation(rec OutboundRecord, out profile.Outbound) expectation {
	return expectation{
		MessageID:     rec.AS2MessageID,
		SignedMDN:     rec.SignedMDN,
		MessageSigned: rec.SigningAlgorithm != profile.SignNone,
		Expected:      parseMICs(rec.ExpectedMICs),
		Fallback:      parseMICs(rec.fallbackMICs),
		Certificates:  out.PartnerCertificates,
		AllowSHA1:     out.Remote.AllowSHA1,
		GCM:           rec.EncryptionAlgorithm.GCM(),
		Now:           c.now(),
	}
}

// keepReceipt stores an MDN as the message's receipt stage unless the message has one:
// the first receipt stands. It reports whether it stored one.
func (c *core) keepReceipt(ctx context.Context, rec OutboundRecord, contentType string, body []byte) (bool, error) {
	ok, err := claimReceipt(ctx, c.db, rec.ID, rec.MessageID)
	if err != nil || !ok {
		return false, err
	}
	if err := c.storeReceipt(ctx, rec, contentType, body); err != nil {
		return false, err
	}
	return true, nil
}

// storeReceipt stores the MDN of a record that holds the message's receipt claim, durably
// and recorded; on failure the claim is given back.
func (c *core) storeReceipt(ctx context.Context, rec OutboundRecord, contentType string, body []byte) error {
	p, err := c.putReceipt(ctx, rec, contentType, body, storage.NoReplace())
	if err != nil || p == nil {
		return err
	}
	err = c.store.AddPayload(ctx, *p)
	if err != nil && !errors.Is(err, persistence.ErrConflict) {
		// No row names the blob; it goes, as a failed insert's blobs do.
		if derr := c.blobs.Delete(ctx, p.Key); derr != nil {
			c.log.WarnContext(ctx, "delete an unrecorded receipt blob", "error", derr)
		}
		c.releaseReceipt(ctx, rec)
		return fmt.Errorf("store the receipt of message %d: %w", rec.MessageID, err)
	}
	return nil
}

// writeReceipt writes the MDN's blob without flushing it, for the engine to flush and
// record with the outcome; nil when the message has a receipt blob already, unless
// replace.
func (c *core) writeReceipt(ctx context.Context, rec OutboundRecord, contentType string, body []byte, replace bool) (*persistence.Payload, error) {
	if replace {
		return c.putReceipt(ctx, rec, contentType, body, storage.DeferSync())
	}
	return c.putReceipt(ctx, rec, contentType, body, storage.DeferSync(), storage.NoReplace())
}

// putReceipt writes the receipt blob: a MIME entity (its Content-Type, then the body as
// received), so it can be verified again later. With storage.NoReplace an existing blob
// stays and nil is returned: a message relayed from an inbound exchange already has a
// receipt (the MDN we answered). On failure the claim is given back.
func (c *core) putReceipt(ctx context.Context, rec OutboundRecord, contentType string, body []byte, opts ...storage.PutOption) (*persistence.Payload, error) {
	var entity bytes.Buffer
	entity.Grow(len(body) + len(contentType) + 48)
	entity.WriteString("MIME-Version: 1.0\r\nContent-Type: " + headerValue(contentType) + "\r\n\r\n")
	entity.Write(body)
	blob, err := c.blobs.Put(ctx, rec.MessageID, persistence.PayloadReceipt, &entity, opts...)
	if errors.Is(err, fs.ErrExist) {
		return nil, nil
	}
	if err != nil {
		c.releaseReceipt(ctx, rec)
		return nil, fmt.Errorf("store the receipt of message %d: %w", rec.MessageID, err)
	}
	return &persistence.Payload{MessageID: rec.MessageID, Stage: persistence.PayloadReceipt,
		Key: blob.Key, Size: blob.Size, SHA256: blob.SHA256, CreatedAt: c.now().UTC()}, nil
}

func (c *core) releaseReceipt(ctx context.Context, rec OutboundRecord) {
	if err := releaseReceipt(context.WithoutCancel(ctx), c.db, rec.ID); err != nil {
		c.log.WarnContext(ctx, "release the receipt claim", "error", err)
	}
}

// largeMessage is the size above which an attempt hands its memory back when it ends.
const largeMessage = 32 << 20

// Sender is a running as2-sender instance: a delivery.Deliverer that sends each message
// to its partner as the partner's remote profile says.
//
// A document below streamThreshold is built in memory, held about once: it is read into
// the buffer that becomes the (compressed, signed) entity, and a CBC envelope is
// encrypted as the request is written. A larger one is built while it is sent (see
// streamed), in bounded memory, or spooled to a file first when the partner refuses
// chunked requests. A GCM envelope is always built whole, as GCM's tag covers all of
// it, and is refused above maxGCMMessage. The partner profile's max_message_size_mib
// bounds the size.
type Sender struct {
	*core
	name     persistence.InstanceName
	cfg      *Config
	domain   string
	asyncURL func(org string) string
	clients  clients
	product  func() string
	tempDir  string
}

func (s *Sender) productName() string {
	if s.product == nil {
		return product.String(false)
	}
	return s.product()
}

var _ delivery.Deliverer = (*Sender)(nil)

// New builds a sender instance from a validated config.
func New(deps Deps, name persistence.InstanceName, cfg *Config) (delivery.Deliverer, error) {
	if cfg == nil {
		cfg = NewConfig()
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("as2-sender %s: %w", name, err)
	}
	c, err := newCore(deps)
	if err != nil {
		return nil, err
	}
	c.log = c.log.With("plugin", string(persistence.PluginAS2Sender))
	tempDir := cmp.Or(deps.TempDir, os.TempDir())
	removeStaleSpools(tempDir, c.now(), c.log)
	return &Sender{
		core:     c,
		name:     name,
		cfg:      cfg,
		domain:   messageIDDomain(cfg.MessageIDDomain, deps.BaseURL),
		asyncURL: deps.AsyncMDNURL,
		product:  deps.Product,
		clients:  clients{idle: cfg.Options().MaxConcurrent, tel: deps.Telemetry},
		tempDir:  tempDir,
	}, nil
}

// Close releases idle connections.
func (s *Sender) Close() { s.clients.closeAll() }

// Deliver sends the message once, or reports an outcome an earlier attempt already
// settled (see plan).
func (s *Sender) Deliver(ctx context.Context, a delivery.Attempt) delivery.Result {
	if a.Message.Size > largeMessage {
		// The runtime would keep the garbage of a large message for a long while; the
		// next large one then comes on top of it.
		defer debug.FreeOSMemory()
	}
	org, partner := string(a.Message.From), string(a.Message.To)
	out, err := s.dir.Outbound(ctx, org, partner)
	if errors.Is(err, persistence.ErrNotFound) {
		return delivery.Permanent(delivery.ClassInternal, fmt.Errorf("no AS2 profiles to send from %s to %s", org, partner))
	}
	if err != nil {
		s.log.WarnContext(ctx, "resolve AS2 profiles", "error", err)
		return delivery.Transient(delivery.ClassInternal, errors.New("cannot resolve the AS2 profiles"))
	}
	rec, fresh, res, done := s.plan(ctx, a)
	if done {
		return res
	}
	msg, res, ok := s.prepare(ctx, a, out)
	if !ok {
		return res
	}
	defer msg.cleanup()
	msg.rec.ID, msg.rec.AS2MessageID = rec.ID, rec.AS2MessageID
	if fresh {
		msg.rec.AS2MessageID = newMessageID(s.domain, a.Message.ID, a.Delivery.ID)
	}
	rec = msg.rec
	if err := startSend(ctx, s.db, &rec, fresh); err != nil {
		s.log.ErrorContext(ctx, "record an AS2 message before sending it", "error", err)
		return delivery.Transient(delivery.ClassInternal, errors.New("cannot record the AS2 message"))
	}
	msg.header.MessageID = rec.AS2MessageID
	if m := msg.streamed; m != nil && m.spoolPath == "" && rec.MDNMode != profile.MDNNone {
		m.record = func(mics mime.MICs) error {
			return recordMICs(ctx, s.db, rec.ID, builtMICs(&mics, msg.expected), builtMICs(&mics, msg.fallback))
		}
	}
	return s.send(ctx, &rec, out, msg)
}

// plan decides what this attempt does from what earlier attempts of the delivery did.
// The first attempt sends under a new Message-ID (fresh). After an operator's redeliver,
// the first attempt sends under a new Message-ID when the operator asked for a new
// message, and otherwise again under the delivery's last Message-ID, answered or not: a
// partner that took it answers its stored MDN and processes nothing twice. An attempt
// whose Message-ID already has a known end (an authentic MDN, delivered without a
// receipt, failed, or waiting for an async MDN) and no redeliver since only happens when
// the engine lost that outcome, so it reports the outcome again rather than sending twice
// (done); this holds too for a same-Message-ID resend that met a transport failure, since
// the earlier MDN already proves the partner has the message. Any other attempt resends
// under the same Message-ID, so the partner can tell a repeat.
func (s *Sender) plan(ctx context.Context, a delivery.Attempt) (rec OutboundRecord, fresh bool, res delivery.Result, done bool) {
	if a.Delivery.Attempts == 1 {
		// A delivery's first claim: records are written only by its attempts, and a
		// claim counts the attempt before it runs, so there is none to read.
		return OutboundRecord{}, true, delivery.Result{}, false
	}
	rec, err := currentRecord(ctx, s.db, a.Delivery.ID)
	if errors.Is(err, persistence.ErrNotFound) {
		return OutboundRecord{}, true, delivery.Result{}, false
	}
	if err != nil {
		s.log.ErrorContext(ctx, "read the delivery's AS2 message", "error", err)
		return rec, false, delivery.Transient(delivery.ClassInternal, errors.New("cannot read the AS2 message record")), true
	}
	mode, again, err := s.redeliveredSince(ctx, a.Delivery, rec.LastSentAt)
	if err != nil {
		s.log.ErrorContext(ctx, "read the message's history", "error", err)
		return rec, false, delivery.Transient(delivery.ClassInternal, errors.New("cannot read the message history")), true
	}
	if again {
		s.log.InfoContext(ctx, "AS2 message redelivered", "as2_message_id", rec.AS2MessageID, "resend", string(mode))
		return rec, mode == persistence.ResendNew, delivery.Result{}, false
	}
	if res, ok := knownOutcome(rec); ok {
		s.log.InfoContext(ctx, "AS2 message already has an outcome; not sent again",
			"as2_message_id", rec.AS2MessageID, "outcome", rec.Outcome)
		p, err := s.unrecordedReceipt(ctx, rec)
		if err != nil {
			// The outcome stands without it, as it does when a receipt cannot be kept.
			s.log.ErrorContext(ctx, "recover the message's receipt", "error", err)
		} else if p != nil {
			res.Payloads = []persistence.Payload{*p}
		}
		return rec, false, res, true
	}
	return rec, false, delivery.Result{}, false
}

// knownOutcome is the result a record already settled, if any.
func knownOutcome(rec OutboundRecord) (delivery.Result, bool) {
	if rec.MDN != nil {
		if rec.MDN.Verdict == VerdictAccepted {
			return delivery.Delivered(), true
		}
		// An outcome the engine lost pauses the partner as the first one would have.
		pause := ""
		if d, err := mime.ParseDisposition(rec.MDN.Disposition); err == nil {
			pause = pauseFor(d)
		}
		return delivery.Pausing(delivery.ClassRefused, errors.New(rec.Reason), pause), true
	}
	switch rec.Outcome {
	case OutcomeDelivered:
		return delivery.Delivered(), true
	case OutcomeFailed:
		return delivery.Permanent(rec.failureClass(), errors.New(rec.Reason)), true
	case OutcomeAwaiting:
		if rec.AckDeadline != nil {
			return delivery.AwaitAck(*rec.AckDeadline), true
		}
	}
	return delivery.Result{}, false
}

// failureClass is the class of a failed record's failure as its HTTP status tells it: the
// record keeps no class, and only an outcome the engine lost is read back this way.
func (rec OutboundRecord) failureClass() delivery.ErrorClass {
	switch code := rec.HTTPStatus; {
	case code == 0:
		return delivery.ClassTransport
	case code >= 200 && code < 300:
		return delivery.ClassRefused
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests:
		return delivery.ClassThrottled
	case code >= 500 && code < 600:
		return delivery.ClassHTTP5xx
	}
	return delivery.ClassHTTP4xx
}

// redeliveredSince reports an operator's redeliver of the delivery after since, and the
// resend mode of the latest one.
func (s *Sender) redeliveredSince(ctx context.Context, d persistence.Delivery, since time.Time) (persistence.ResendMode, bool, error) {
	hist, err := s.store.ListHistory(ctx, d.MessageID)
	if err != nil {
		return "", false, err
	}
	var mode persistence.ResendMode
	found := false
	for _, h := range hist {
		if h.Kind != persistence.HistoryRedeliverRequested || h.DeliveryID == nil || *h.DeliveryID != d.ID || !h.At.After(since) {
			continue
		}
		mode, found = persistence.ResendModeOf(h), true
	}
	return mode, found, nil
}

// outgoing is a message ready to POST: built in memory, or streamed.
type outgoing struct {
	built    *mime.Built
	streamed *streamed
	header   headerParams
	rec      OutboundRecord
	endpoint string
	// expected and fallback are the algorithms of the MICs the record keeps.
	expected, fallback []cms.DigestAlgorithm
}

// setBody gives req the message's body and returns what ends it.
func (o outgoing) setBody(ctx context.Context, req *http.Request) (stop func()) {
	if o.streamed != nil {
		return o.streamed.setBody(ctx, req)
	}
	return setBody(req, o.built)
}

// fields are the message's Content-Type and the other MIME fields sent as HTTP headers.
func (o outgoing) fields() (string, http.Header) {
	if o.streamed != nil {
		return o.streamed.stream.ContentType, o.streamed.stream.Header
	}
	return o.built.ContentType, o.built.Header
}

func (o outgoing) cleanup() {
	if o.streamed != nil {
		o.streamed.cleanup()
	}
}

// prepare reads the document and builds the message per the profiles. A problem another
// try cannot fix (a profile that cannot be followed, a document too large) is permanent.
func (s *Sender) prepare(ctx context.Context, a delivery.Attempt, out profile.Outbound) (outgoing, delivery.Result, bool) {
	rem, loc := out.Remote, out.Local
	fail := func(format string, args ...any) (outgoing, delivery.Result, bool) {
		return outgoing{}, delivery.Permanent(delivery.ClassInternal, fmt.Errorf(format, args...)), false
	}
	if err := checkOutboundChoices(rem); err != nil {
		return fail("AS2 profile of partner %s: %v", a.Message.To, err)
	}
	if rem.EndpointURL == "" {
		return fail("AS2 profile of partner %s has no endpoint URL", a.Message.To)
	}
	limit := int64(rem.MaxMessageSizeMiB) << 20
	if limit > 0 && a.Message.Size > limit {
		return fail("the document (%d bytes) exceeds the partner's limit of %d MiB", a.Message.Size, rem.MaxMessageSizeMiB)
	}

	contentType := contentTypeFor(string(a.Message.OriginalFileName), s.cfg.ContentTypes, s.cfg.ContentType)
	opts := mime.BuildOptions{ContentType: contentType, Compress: rem.Compress, MICAlgorithm: rem.MDNMICAlgorithm.Digest(),
		CompressAfterSigning: rem.CompressionOrder == profile.CompressAfterSigning}
	if rem.SigningAlgorithm != profile.SignNone {
		if out.Signer == nil {
			return fail("organization %s has no signing certificate", a.Message.From)
		}
		sg := *out.Signer
		sg.Digest = rem.SigningAlgorithm.Digest()
		opts.Sign = &sg
	}
	if rem.EncryptionAlgorithm != profile.EncryptNone {
		if out.EncryptTo == nil {
			return fail("partner %s has no valid certificate to encrypt to", a.Message.To)
		}
		cipher := rem.EncryptionAlgorithm.Cipher()
		if !cipher.Outbound() {
			return fail("%s is accepted inbound only; choose an AES cipher to send to partner %s", rem.EncryptionAlgorithm, a.Message.To)
		}
		opts.Encrypt = &mime.Encryption{
			Recipients:     []*x509.Certificate{out.EncryptTo},
			EncryptOptions: cms.EncryptOptions{Cipher: cipher, KeyTransport: rem.KeyTransport.CMS()},
		}
	}
	asyncURL := ""
	if rem.MDNMode == profile.MDNAsync {
		asyncURL = rem.AsyncMDNURL
		if asyncURL == "" && s.asyncURL != nil {
			asyncURL = s.asyncURL(string(a.Message.From))
		}
		if asyncURL == "" {
			return fail("no URL to receive async MDNs at: set the async MDN URL of partner %s", a.Message.To)
		}
	}

	// The MICs a receipt may return are computed while the message is built, because
	// the content they cover is not kept.
	var expected, fallback []cms.DigestAlgorithm
	if rem.MDNMode != profile.MDNNone {
		var requested []cms.DigestAlgorithm
		if rem.SignedMDN {
			requested = []cms.DigestAlgorithm{opts.MICAlgorithm}
		}
		expected, fallback = micAlgorithms(requested, rem.SigningAlgorithm.Digest(), rem.AllowSHA1)
		opts.MICAlgorithms = append(slices.Clone(expected), fallback...)
	}

	gcm := opts.Encrypt != nil && opts.Encrypt.Cipher.AEAD()
	if gcm && a.Message.Size > maxGCMMessage {
		return fail("%s", gcmTooLarge(a.Message.Size, a.Message.To))
	}

	rec := OutboundRecord{
		DeliveryID:          a.Delivery.ID,
		MessageID:           a.Message.ID,
		Organization:        string(a.Message.From),
		Partner:             string(a.Message.To),
		AS2From:             string(loc.AS2ID),
		AS2To:               string(rem.AS2ID),
		Compressed:          rem.Compress,
		SigningAlgorithm:    rem.SigningAlgorithm,
		EncryptionAlgorithm: rem.EncryptionAlgorithm,
		KeyTransport:        rem.KeyTransport,
		MDNMode:             rem.MDNMode,
		SignedMDN:           rem.SignedMDN && rem.MDNMode != profile.MDNNone,
		MICAlgorithm:        rem.MDNMICAlgorithm,
		ExpectedMICs:        []string{},
		fallbackMICs:        []string{},
	}
	// Partners only look for the field's presence; the AS2 id stands in when the local
	// profile names no address.
	notify := loc.MDNNotificationTo
	if notify == "" {
		notify = string(loc.AS2ID)
	}
	msg := outgoing{
		rec:      rec,
		expected: expected,
		fallback: fallback,
		header: headerParams{
			From:         loc.AS2ID,
			To:           rem.AS2ID,
			Subject:      subject(string(a.Message.OriginalFileName), a.Message.ID),
			Date:         s.now(),
			MDNMode:      rem.MDNMode,
			SignedMDN:    rec.SignedMDN,
			MICAlgorithm: opts.MICAlgorithm,
			NotifyTo:     notify,
			AsyncURL:     asyncURL,
		},
		endpoint: rem.EndpointURL,
	}
	if a.Message.Size >= streamThreshold && !gcm {
		return s.prepareStream(ctx, a, rem, opts, msg)
	}

	doc, err := a.Open(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "open the document", "error", err)
		return outgoing{}, delivery.Transient(delivery.ClassInternal, errors.New("cannot read the document")), false
	}
	defer doc.Close()
	src := &countingReader{r: doc}
	var r io.Reader = src
	readLimit := limit
	if gcm && (readLimit == 0 || readLimit > maxGCMMessage) {
		readLimit = maxGCMMessage
	}
	if readLimit > 0 {
		r = io.LimitReader(src, readLimit+1)
	}
	built, err := mime.BuildFrom(r, a.Message.Size, string(a.Message.OriginalFileName), opts)
	switch {
	case src.err != nil:
		s.log.WarnContext(ctx, "read the document", "error", src.err)
		return outgoing{}, delivery.Transient(delivery.ClassInternal, errors.New("cannot read the document")), false
	case limit > 0 && src.n > limit:
		return fail("the document exceeds the partner's limit of %d MiB", rem.MaxMessageSizeMiB)
	case gcm && src.n > maxGCMMessage:
		return fail("%s", gcmTooLarge(src.n, a.Message.To))
	case err != nil:
		return fail("cannot build the AS2 message: %v", err)
	}
	msg.built = built
	if rem.MDNMode != profile.MDNNone {
		msg.rec.ExpectedMICs, msg.rec.fallbackMICs = builtMICs(&built.MICs, expected), builtMICs(&built.MICs, fallback)
	}
	return msg, delivery.Result{}, true
}

// countingReader counts what the document yields and keeps its read error, which is
// the storage's fault rather than the message's.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// builtMICs are the message's MICs with algs, as the record keeps them.
func builtMICs(b *mime.MICs, algs []cms.DigestAlgorithm) []string {
	var mics []mime.MIC
	for _, a := range algs {
		if m, ok := b.MICWith(a); ok {
			mics = append(mics, m)
		}
	}
	return splitLines(micLines(mics))
}

// checkOutboundChoices refuses a profile value outside its domain (the directory hands
// out validated profiles; this guards the record's columns).
func checkOutboundChoices(r profile.Remote) error {
	if _, err := profile.ParseSigningAlgorithm(string(r.SigningAlgorithm)); err != nil {
		return err
	}
	if _, err := profile.ParseEncryptionAlgorithm(string(r.EncryptionAlgorithm)); err != nil {
		return err
	}
	if _, err := profile.ParseKeyTransport(string(r.KeyTransport)); err != nil {
		return err
	}
	if _, err := profile.ParseMDNMode(string(r.MDNMode)); err != nil {
		return err
	}
	_, err := profile.ParseMICAlgorithm(string(r.MDNMICAlgorithm))
	return err
}

// send POSTs the message and turns the answer into the attempt's result.
func (s *Sender) send(ctx context.Context, rec *OutboundRecord, out profile.Outbound, msg outgoing) delivery.Result {
	rem := out.Remote
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, msg.endpoint, nil)
	if err != nil {
		return s.fail(ctx, rec, delivery.ClassInternal, errors.New("the endpoint URL cannot be used"), 0, "")
	}
	stop := msg.setBody(ctx, req)
	defer stop()
	contentType, fields := msg.fields()
	req.Header = requestHeader(contentType, fields, msg.header)
	req.Header.Set("User-Agent", s.productName())
	client := s.clients.get(rec.Partner, out)
	s.log.DebugContext(ctx, "sending AS2 message", "as2_message_id", rec.AS2MessageID, "attempt", rec.Attempts, "bytes", req.ContentLength)

	resp, err := client.Do(req)
	if res, failed := s.streamedResult(ctx, rec, rem, msg, err); failed {
		return res
	}
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cause := errors.New("interrupted")
			s.finish(ctx, rec, sendResult{Outcome: OutcomeRetry, Reason: cause.Error()})
			return delivery.Transient(delivery.ClassTransport, cause)
		}
		if isTimeout(err) {
			return s.retry(ctx, rec, rem.Retry, delivery.ClassTimeout,
				fmt.Errorf("no response within %s", client.Timeout), time.Time{}, 0, "")
		}
		return s.retry(ctx, rec, rem.Retry, delivery.ClassTransport, errors.New(transportReason(err, rem)), time.Time{}, 0, "")
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	code, software := resp.StatusCode, resp.Header.Get("Server")
	switch {
	case code >= 200 && code < 300:
	case code >= 300 && code < 400:
		return s.retry(ctx, rec, rem.Retry, delivery.ClassHTTP4xx, fmt.Errorf("redirect refused (HTTP %d)", code), time.Time{}, code, software)
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests:
		at, _ := delivery.RetryAfter(resp.Header.Get("Retry-After"), s.now())
		return s.retry(ctx, rec, rem.Retry, delivery.ClassThrottled, statusError(resp), at, code, software)
	case code >= 500 && code < 600:
		at, _ := delivery.RetryAfter(resp.Header.Get("Retry-After"), s.now())
		return s.retry(ctx, rec, rem.Retry, delivery.ClassHTTP5xx, delivery.HTTPStatusError(code), at, code, software)
	case code >= 400 && code < 500:
		return s.retry(ctx, rec, rem.Retry, delivery.ClassHTTP4xx, statusError(resp), time.Time{}, code, software)
	default:
		return s.retry(ctx, rec, rem.Retry, delivery.ClassHTTP4xx, delivery.HTTPStatusError(code), time.Time{}, code, software)
	}

	switch rem.MDNMode {
	case profile.MDNAsync:
		minutes := rem.ReceiptTimeoutMinutes
		if minutes <= 0 {
			minutes = 60
		}
		deadline := s.now().Add(time.Duration(minutes) * time.Minute)
		s.finish(ctx, rec, sendResult{Outcome: OutcomeAwaiting, AckDeadline: deadline, HTTPStatus: code, PartnerSoftware: software})
		s.log.InfoContext(ctx, "AS2 message sent; awaiting an async MDN", "as2_message_id", rec.AS2MessageID, "deadline", deadline)
		return delivery.AwaitAck(deadline)
	case profile.MDNSync:
		return s.syncReceipt(ctx, rec, out, resp)
	}
	s.finish(ctx, rec, sendResult{Outcome: OutcomeDelivered, HTTPStatus: code, PartnerSoftware: software})
	s.log.InfoContext(ctx, "AS2 message sent without a receipt", "as2_message_id", rec.AS2MessageID)
	return delivery.Delivered()
}

// syncReceipt judges the MDN in the response.
func (s *Sender) syncReceipt(ctx context.Context, rec *OutboundRecord, out profile.Outbound, resp *http.Response) delivery.Result {
	code, software := resp.StatusCode, resp.Header.Get("Server")
	limit := int64(s.cfg.MaxMDNKiB) << 10
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		class := delivery.ClassTransport
		if isTimeout(err) {
			class = delivery.ClassTimeout
		}
		return s.retry(ctx, rec, out.Remote.Retry, class, errors.New("the connection failed while the MDN was read"), time.Time{}, code, software)
	}
	if int64(len(body)) > limit {
		return s.fail(ctx, rec, delivery.ClassRefused, fmt.Errorf("the MDN is larger than %d KiB; raise the sender's max_mdn_kib or ask the partner why its receipt is so large", s.cfg.MaxMDNKiB), code, software)
	}
	contentType := resp.Header.Get("Content-Type")
	if len(bytes.TrimSpace(body)) == 0 || contentType == "" {
		return s.fail(ctx, rec, delivery.ClassRefused, fmt.Errorf("the partner answered HTTP %d without the MDN requested; ask the partner whether it took the message and to answer with an MDN, or set mdn_mode to async or none if that is what it does", code), code, software)
	}
	v := judge(contentType, body, s.expectation(*rec, out))
	if !v.Definitive {
		s.log.WarnContext(ctx, "synchronous MDN not taken", "as2_message_id", rec.AS2MessageID, "reason", v.Reason)
		return s.fail(ctx, rec, delivery.ClassRefused, errors.New(v.Reason), code, software)
	}
	res := sendResult{Outcome: OutcomeDelivered, HTTPStatus: code, PartnerSoftware: software}
	if !v.Accepted {
		res.Outcome, res.Reason = OutcomeFailed, v.Reason
	}
	m := mdnRecord(v, profile.MDNSync, resp.Header.Get("Message-ID"), s.now())
	receipt := s.recordSyncMDN(ctx, rec, m, res, contentType, body)
	result := delivery.DeliveredNote(v.Note)
	if !v.Accepted {
		s.log.WarnContext(ctx, "partner's MDN refuses the message", "as2_message_id", rec.AS2MessageID, "reason", v.Reason)
		result = delivery.Pausing(delivery.ClassRefused, errors.New(v.Reason), pauseFor(v.MDN.Disposition))
	} else {
		s.log.InfoContext(ctx, "AS2 message delivered", "as2_message_id", rec.AS2MessageID, "disposition", m.Disposition)
	}
	result.Payloads = receipt
	result.Downstream = []persistence.DownstreamReport{mdnDownstream(*rec, v, resp.Header.Get("Date"))}
	return result
}

// retry decides per the partner's retry policy and its rule for the failure's class:
// another try under the same Message-ID (at notBefore at the earliest, a Retry-After), or
// failed when the rule never retries or its retries are used up. Attempts count per
// Message-ID, so a redelivered message gets the policy's full course.
func (s *Sender) retry(ctx context.Context, rec *OutboundRecord, p delivery.RetryPolicy, class delivery.ErrorClass, cause error, notBefore time.Time, code int, software string) delivery.Result {
	rnd := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	dec := p.Decide(class, "partner profile's policy")
	d, ok := dec.Delay(rec.Attempts, rnd)
	if dec.Never {
		return s.fail(ctx, rec, class, fmt.Errorf("%w — not retried (%s: never)", cause, dec.Source), code, software)
	}
	if !ok {
		return s.fail(ctx, rec, class, fmt.Errorf("%w — retries exhausted after %d attempts (%s, %s)", cause, rec.Attempts, dec.Source, dec.Strategy), code, software)
	}
	at := s.now().Add(d)
	if notBefore.After(at) {
		at = notBefore
	}
	s.finish(ctx, rec, sendResult{Outcome: OutcomeRetry, Reason: cause.Error(), HTTPStatus: code, PartnerSoftware: software})
	s.log.WarnContext(ctx, "AS2 message not delivered; will retry", "as2_message_id", rec.AS2MessageID,
		"attempt", rec.Attempts, "reason", cause, "next_attempt_at", at)
	return delivery.RetryAt(at, class, cause)
}

// fail ends the Message-ID's course with a permanent failure.
func (s *Sender) fail(ctx context.Context, rec *OutboundRecord, class delivery.ErrorClass, cause error, code int, software string) delivery.Result {
	s.finish(ctx, rec, sendResult{Outcome: OutcomeFailed, Reason: cause.Error(), HTTPStatus: code, PartnerSoftware: software})
	return delivery.Permanent(class, cause)
}

// finish records a send's result; an interrupted attempt's too, so it outlives ctx.
func (s *Sender) finish(ctx context.Context, rec *OutboundRecord, res sendResult) {
	if err := finishSend(context.WithoutCancel(ctx), s.db, rec.ID, res); err != nil {
		s.log.ErrorContext(ctx, "record the result of an AS2 message", "error", err)
	}
}
