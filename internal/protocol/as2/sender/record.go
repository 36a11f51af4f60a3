package sender

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/mime"
	"wharf/internal/protocol/as2/profile"
)

// Outcome is what became of one AS2 message we sent, as far as the sender knows.
type Outcome string

const (
	OutcomeSending   Outcome = "sending" // the POST started; nothing came back yet
	OutcomeRetry     Outcome = "retry"
	OutcomeAwaiting  Outcome = "awaiting_mdn"
	OutcomeDelivered Outcome = "delivered"
	OutcomeFailed    Outcome = "failed"
)

// AllOutcomes is the canonical list.
var AllOutcomes = []Outcome{OutcomeSending, OutcomeRetry, OutcomeAwaiting, OutcomeDelivered, OutcomeFailed}

// ParseOutcome parses a stored outcome.
func ParseOutcome(s string) (Outcome, error) {
	for _, o := range AllOutcomes {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("invalid AS2 send outcome %q", s)
}

// Verdict is our judgement of an authentic MDN.
type Verdict string

const (
	VerdictAccepted Verdict = "accepted" // a positive disposition with a matching MIC
	VerdictRefused  Verdict = "refused"  // a negative disposition or a MIC that does not match
)

// ParseVerdict parses a stored verdict.
func ParseVerdict(s string) (Verdict, error) {
	switch Verdict(s) {
	case VerdictAccepted, VerdictRefused:
		return Verdict(s), nil
	}
	return "", fmt.Errorf("invalid MDN verdict %q", s)
}

// OutboundRecord is one AS2 message we sent: what it was, how it was protected, and the
// receipt it got. A delivery keeps one Message-ID (one record) across its retries; it
// gets a new record only when it is sent anew.
type OutboundRecord struct {
	ID                  int64                       `json:"id"`
	DeliveryID          int64                       `json:"delivery_id"`
	MessageID           int64                       `json:"message_id"`
	AS2MessageID        string                      `json:"as2_message_id"`
	Organization        string                      `json:"organization"`
	Partner             string                      `json:"partner"`
	AS2From             string                      `json:"as2_from"`
	AS2To               string                      `json:"as2_to"`
	Compressed          bool                        `json:"compressed"`
	SigningAlgorithm    profile.SigningAlgorithm    `json:"signing_algorithm"`
	EncryptionAlgorithm profile.EncryptionAlgorithm `json:"encryption_algorithm"`
	KeyTransport        profile.KeyTransport        `json:"key_transport"`
	MDNMode             profile.MDNMode             `json:"mdn_mode"`
	SignedMDN           bool                        `json:"signed_mdn"`
	// MICAlgorithm is the algorithm we asked the partner to compute its MIC with.
	MICAlgorithm profile.MICAlgorithm `json:"mic_algorithm"`
	// ExpectedMICs are the values a correct receipt may return, as Received-Content-MIC
	// writes them: for the requested algorithm and for our signature's digest.
	ExpectedMICs []string `json:"expected_mics"`
	// fallbackMICs cover the same content with the other algorithms, for a partner we did
	// not ask for a particular one (an unsigned receipt).
	fallbackMICs []string
	// Attempts counts the POSTs made with this Message-ID.
	Attempts    int        `json:"attempts"`
	FirstSentAt time.Time  `json:"first_sent_at"`
	LastSentAt  time.Time  `json:"last_sent_at"`
	Outcome     Outcome    `json:"outcome"`
	Reason      string     `json:"reason,omitempty"`
	AckDeadline *time.Time `json:"ack_deadline,omitempty"`
	HTTPStatus  int        `json:"http_status,omitempty"`
	// PartnerSoftware is the Server header of the partner's answer, or the User-Agent of
	// its async MDN.
	PartnerSoftware string `json:"partner_software,omitempty"`
	// MDN is the first authentic receipt; nil until one came.
	MDN *MDNRecord `json:"mdn,omitempty"`
	// ReceiptStored reports that this record's MDN is the message's receipt stage.
	ReceiptStored bool `json:"receipt_stored"`
}

// MDNRecord is what an authentic MDN said.
type MDNRecord struct {
	Verdict    Verdict   `json:"verdict"`
	ReceivedAt time.Time `json:"received_at"`
	// Transport is sync (the HTTP response) or async (posted to us).
	Transport profile.MDNMode `json:"transport"`
	// MessageID is the MDN's own Message-ID header.
	MessageID       string `json:"message_id,omitempty"`
	Disposition     string `json:"disposition"`
	Signed          bool   `json:"signed"`
	Signer          string `json:"signer,omitempty"`
	SignatureDigest string `json:"signature_digest,omitempty"`
	// MIC is the Received-Content-MIC as the partner wrote it.
	MIC         string `json:"mic,omitempty"`
	MICMatched  bool   `json:"mic_matched"`
	ReportingUA string `json:"reporting_ua,omitempty"`
	// Note is what the verdict noted of an accepted MDN, e.g. "receipt without MIC".
	Note string `json:"note,omitempty"`
}

const recordCols = `id, delivery_id, message_id, as2_message_id, organization, partner, as2_from, as2_to,
	compressed, signing_algorithm, encryption_algorithm, key_transport, mdn_mode, signed_mdn, mic_algorithm,
	expected_mics, fallback_mics, attempts, first_sent_at, last_sent_at, outcome, outcome_reason, ack_deadline,
	http_status, partner_software, mdn_verdict, mdn_received_at, mdn_transport, mdn_message_id, mdn_disposition,
	mdn_signed, mdn_signer, mdn_signature_digest, mdn_mic, mdn_mic_matched, mdn_reporting_ua, receipt_stored, mdn_note`

func scanRecord(tx module.Tx, row module.Row) (OutboundRecord, error) {
	var (
		r                                    OutboundRecord
		expected, fallback, outcome, verdict string
		mdnTransport                         string
		ack, mdnAt                           time.Time
		m                                    MDNRecord
	)
	err := row.Scan(&r.ID, &r.DeliveryID, &r.MessageID, &r.AS2MessageID, &r.Organization, &r.Partner, &r.AS2From, &r.AS2To,
		&r.Compressed, &r.SigningAlgorithm, &r.EncryptionAlgorithm, &r.KeyTransport, &r.MDNMode, &r.SignedMDN, &r.MICAlgorithm,
		&expected, &fallback, &r.Attempts, tx.ScanTime(&r.FirstSentAt), tx.ScanTime(&r.LastSentAt), &outcome, &r.Reason, tx.ScanTime(&ack),
		&r.HTTPStatus, &r.PartnerSoftware, &verdict, tx.ScanTime(&mdnAt), &mdnTransport, &m.MessageID, &m.Disposition,
		&m.Signed, &m.Signer, &m.SignatureDigest, &m.MIC, &m.MICMatched, &m.ReportingUA, &r.ReceiptStored, &m.Note)
	if err != nil {
		return OutboundRecord{}, err
	}
	if r.Outcome, err = ParseOutcome(outcome); err != nil {
		return OutboundRecord{}, err
	}
	r.ExpectedMICs, r.fallbackMICs = splitLines(expected), splitLines(fallback)
	if !ack.IsZero() {
		r.AckDeadline = &ack
	}
	if verdict != "" {
		if m.Verdict, err = ParseVerdict(verdict); err != nil {
			return OutboundRecord{}, err
		}
		if m.Transport, err = profile.ParseMDNMode(mdnTransport); err != nil {
			return OutboundRecord{}, err
		}
		m.ReceivedAt = mdnAt
		r.MDN = &m
	}
	return r, nil
}

func splitLines(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

func micLines(mics []mime.MIC) string {
	out := make([]string, len(mics))
	for i, m := range mics {
		out[i] = m.String()
	}
	return strings.Join(out, "\n")
}

// parseMICs reads stored MIC values; one that does not parse (an algorithm this build
// no longer knows) matches nothing.
func parseMICs(lines []string) []mime.MIC {
	out := make([]mime.MIC, 0, len(lines))
	for _, l := range lines {
		if m, err := mime.ParseMIC(l); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// FindOutbound lists the AS2 messages sent for a message, oldest first; an empty list
// when the AS2 sender had no part in it.
func FindOutbound(ctx context.Context, db module.SQL, messageID int64) ([]OutboundRecord, error) {
	var out []OutboundRecord
	err := db.Read(ctx, func(tx module.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+recordCols+` FROM as2_outbound WHERE message_id = ? ORDER BY id`, messageID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRecord(tx, rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("find AS2 messages sent for message %d: %w", messageID, err)
	}
	if out == nil {
		out = []OutboundRecord{}
	}
	return out, nil
}

// currentRecord is the delivery's newest record: the Message-ID it is sent under now.
func currentRecord(ctx context.Context, db module.SQL, deliveryID int64) (OutboundRecord, error) {
	var out OutboundRecord
	err := db.Read(ctx, func(tx module.Tx) error {
		var err error
		out, err = scanRecord(tx, tx.QueryRow(ctx,
			`SELECT `+recordCols+` FROM as2_outbound WHERE delivery_id = ? ORDER BY id DESC LIMIT 1`, deliveryID))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return OutboundRecord{}, fmt.Errorf("AS2 message of delivery %d: %w", deliveryID, persistence.ErrNotFound)
	}
	if err != nil {
		return OutboundRecord{}, fmt.Errorf("AS2 message of delivery %d: %w", deliveryID, err)
	}
	return out, nil
}

// recordByMessageID finds the record of an AS2 Message-ID we sent, and whether it is
// still its delivery's current one.
func recordByMessageID(ctx context.Context, db module.SQL, as2ID string) (rec OutboundRecord, current bool, err error) {
	err = db.Read(ctx, func(tx module.Tx) error {
		var err error
		if rec, err = scanRecord(tx, tx.QueryRow(ctx,
			`SELECT `+recordCols+` FROM as2_outbound WHERE as2_message_id = ?`, as2ID)); err != nil {
			return err
		}
		var newest int64
		if err := tx.QueryRow(ctx, `SELECT MAX(id) FROM as2_outbound WHERE delivery_id = ?`, rec.DeliveryID).Scan(&newest); err != nil {
			return err
		}
		current = newest == rec.ID
		return nil
	})
	if errors.Is(err, sql.ErrNoRows) {
		return OutboundRecord{}, false, fmt.Errorf("AS2 message %s: %w", as2ID, persistence.ErrNotFound)
	}
	if err != nil {
		return OutboundRecord{}, false, fmt.Errorf("AS2 message %s: %w", as2ID, err)
	}
	return rec, current, nil
}

// startSend records a POST about to start: a new record for a new Message-ID, or one more
// attempt of the current one with what this attempt sends. It fills in ID, Attempts and
// the times.
func startSend(ctx context.Context, db module.SQL, r *OutboundRecord, fresh bool) error {
	err := db.Write(ctx, func(tx module.Tx) error {
		now := tx.Now()
		if fresh {
			r.Attempts, r.FirstSentAt, r.LastSentAt = 1, now, now
			return tx.QueryRow(ctx, `INSERT INTO as2_outbound (delivery_id, message_id, as2_message_id, organization,
					partner, as2_from, as2_to, compressed, signing_algorithm, encryption_algorithm, key_transport,
					mdn_mode, signed_mdn, mic_algorithm, expected_mics, fallback_mics, attempts, first_sent_at,
					last_sent_at, outcome, outcome_reason, ack_deadline, http_status, partner_software,
					mdn_verdict, mdn_received_at, mdn_transport, mdn_message_id, mdn_disposition, mdn_signed,
					mdn_signer, mdn_signature_digest, mdn_mic, mdn_mic_matched, mdn_reporting_ua, receipt_stored)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', NULL, 0, '',
					'', NULL, '', '', '', ?, '', '', '', ?, '', ?)
				RETURNING id`,
				r.DeliveryID, r.MessageID, r.AS2MessageID, r.Organization, r.Partner, r.AS2From, r.AS2To,
				r.Compressed, r.SigningAlgorithm, r.EncryptionAlgorithm, r.KeyTransport, r.MDNMode, r.SignedMDN,
				r.MICAlgorithm, strings.Join(r.ExpectedMICs, "\n"), strings.Join(r.fallbackMICs, "\n"), r.Attempts,
				tx.Time(now), tx.Time(now), string(OutcomeSending), false, false, false).Scan(&r.ID)
		}
		r.LastSentAt = now
		return tx.QueryRow(ctx, `UPDATE as2_outbound SET attempts = attempts + 1, last_sent_at = ?,
				compressed = ?, signing_algorithm = ?, encryption_algorithm = ?, key_transport = ?, mdn_mode = ?,
				signed_mdn = ?, mic_algorithm = ?, expected_mics = ?, fallback_mics = ?, outcome = ?,
				outcome_reason = '', ack_deadline = NULL
			WHERE id = ?
			RETURNING attempts, first_sent_at`,
			tx.Time(now), r.Compressed, r.SigningAlgorithm, r.EncryptionAlgorithm, r.KeyTransport, r.MDNMode,
			r.SignedMDN, r.MICAlgorithm, strings.Join(r.ExpectedMICs, "\n"), strings.Join(r.fallbackMICs, "\n"),
			string(OutcomeSending), r.ID).Scan(&r.Attempts, tx.ScanTime(&r.FirstSentAt))
	})
	if err != nil {
		return fmt.Errorf("record AS2 message %s: %w", r.AS2MessageID, err)
	}
	r.Outcome = OutcomeSending
	return nil
}

// recordMICs stores the MICs of a message built while it is sent. They are known only
// once its content has been hashed, and are recorded before the body's last byte goes
// out, so a receipt, which the partner can only write once it has the whole message, is
// always judged against them, an async MDN that overtakes the POST's answer included.
func recordMICs(ctx context.Context, db module.SQL, id int64, expected, fallback []string) error {
	err := db.Write(ctx, func(tx module.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE as2_outbound SET expected_mics = ?, fallback_mics = ? WHERE id = ?`,
			strings.Join(expected, "\n"), strings.Join(fallback, "\n"), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the MICs of AS2 message %d: %w", id, err)
	}
	return nil
}

// sendResult is what the partner's answer told us about a send, short of an MDN.
type sendResult struct {
	Outcome         Outcome
	Reason          string
	AckDeadline     time.Time
	HTTPStatus      int
	PartnerSoftware string
}

// finishSend records the result of a POST. A record that already holds an authentic
// MDN keeps its outcome: an async MDN may overtake the answer to the POST it is about.
func finishSend(ctx context.Context, db module.SQL, id int64, res sendResult) error {
	err := db.Write(ctx, func(tx module.Tx) error {
		var deadline any
		if !res.AckDeadline.IsZero() {
			deadline = tx.Time(res.AckDeadline)
		}
		_, err := tx.Exec(ctx, `UPDATE as2_outbound SET outcome = ?, outcome_reason = ?, ack_deadline = ?,
				http_status = ?, partner_software = ?
			WHERE id = ? AND mdn_verdict = ''`,
			string(res.Outcome), persistence.SanitizeReason(res.Reason), deadline, res.HTTPStatus,
			clip(res.PartnerSoftware, maxSoftwareLength), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the result of AS2 message %d: %w", id, err)
	}
	return nil
}

// recordMDN stores what an authentic MDN said, with the outcome it decides. The first
// authentic MDN of a Message-ID stands; a later one changes nothing and recorded is false.
// With claim, the same write also makes the record the one whose MDN becomes the
// message's receipt stage when no other record of the message is (see claimReceipt), and
// claimed says whether it did.
func recordMDN(ctx context.Context, db module.SQL, id, messageID int64, m MDNRecord, res sendResult, claim bool) (recorded, claimed bool, err error) {
	err = db.Write(ctx, func(tx module.Tx) error {
		recorded, claimed = false, false
		status := "http_status"
		args := []any{}
		if res.HTTPStatus != 0 {
			status = "?"
			args = append(args, res.HTTPStatus)
		}
		software := "partner_software"
		if res.PartnerSoftware != "" {
			software = "?"
			args = append(args, clip(res.PartnerSoftware, maxSoftwareLength))
		}
		args = append(args, string(m.Verdict), tx.Time(m.ReceivedAt), string(m.Transport), clip(m.MessageID, maxFieldLength),
			clip(m.Disposition, maxFieldLength), m.Signed, clip(m.Signer, maxFieldLength), m.SignatureDigest,
			clip(m.MIC, maxFieldLength), m.MICMatched, clip(m.ReportingUA, maxFieldLength), clip(m.Note, maxFieldLength),
			string(res.Outcome), persistence.SanitizeReason(res.Reason),
			claim, messageID, true, true, id)
		err := tx.QueryRow(ctx, `UPDATE as2_outbound SET http_status = `+status+`, partner_software = `+software+`,
				mdn_verdict = ?, mdn_received_at = ?, mdn_transport = ?, mdn_message_id = ?, mdn_disposition = ?,
				mdn_signed = ?, mdn_signer = ?, mdn_signature_digest = ?, mdn_mic = ?, mdn_mic_matched = ?,
				mdn_reporting_ua = ?, mdn_note = ?, outcome = ?, outcome_reason = ?, ack_deadline = NULL,
				receipt_stored = CASE WHEN ? AND NOT EXISTS (
						SELECT 1 FROM as2_outbound o WHERE o.message_id = ? AND o.receipt_stored = ?)
					THEN ? ELSE receipt_stored END
			WHERE id = ? AND mdn_verdict = ''
			RETURNING receipt_stored`, args...).Scan(&claimed)
		if tx.IsUniqueViolation(err) {
			return errUniqueReceipt
		}
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		recorded = true
		return nil
	})
	if claim && err != nil && errors.Is(err, errUniqueReceipt) {
		// Another record of the message claimed the receipt meanwhile: record without it.
		return recordMDN(ctx, db, id, messageID, m, res, false)
	}
	if err != nil {
		return false, false, fmt.Errorf("record the MDN of AS2 message %d: %w", id, err)
	}
	return recorded, claimed, nil
}

// errUniqueReceipt ends a write whose claim on the receipt stage met another record's.
var errUniqueReceipt = errors.New("another record of the message claimed its receipt")

// errReceiptTaken ends a write whose claim on the receipt stage lost to another record.
var errReceiptTaken = errors.New("the message's receipt is another record's")

// claimReceipt makes the record the one whose MDN becomes the message's receipt stage;
// false when another record of the message holds it. The partial unique index settles a
// race between two receipts of one message.
func claimReceipt(ctx context.Context, db module.SQL, id, messageID int64) (bool, error) {
	err := db.Write(ctx, func(tx module.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE as2_outbound SET receipt_stored = ?
			WHERE id = ? AND NOT EXISTS (SELECT 1 FROM as2_outbound WHERE message_id = ? AND receipt_stored = ?)`,
			true, id, messageID, true)
		if tx.IsUniqueViolation(err) {
			return errReceiptTaken
		}
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = errReceiptTaken
			}
			return err
		}
		return nil
	})
	if errors.Is(err, errReceiptTaken) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim the receipt of message %d: %w", messageID, err)
	}
	return true, nil
}

// releaseReceipt gives the claim back when the receipt could not be stored.
func releaseReceipt(ctx context.Context, db module.SQL, id int64) error {
	return db.Write(ctx, func(tx module.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE as2_outbound SET receipt_stored = ? WHERE id = ?`, false, id)
		return err
	})
}

// Bounds of the free texts a partner writes into our records.
const (
	maxFieldLength    = 500
	maxSoftwareLength = 200
)

// clip bounds a partner's text and drops control characters.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n]
}
