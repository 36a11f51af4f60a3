package receiver

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// Row states of as2_inbound.
const (
	stateReserved = "reserved"
	stateAnswered = "answered"
)

// inboundRow is one row of as2_inbound.
type inboundRow struct {
	ID              int64
	Instance        persistence.InstanceName
	AS2From         string
	AS2To           string
	AS2MessageID    string
	AS2Version      string
	Partner         string
	Organization    string
	SignatureDigest string // "" when unsigned
	State           string
	ClaimToken      string
	MessageID       int64 // 0 until stored
	FileName        string
	FileNameSent    bool
	Layers          string
	Cipher          string
	KeyTransport    string
	SignatureAlg    string
	SignatureScheme string
	MIC             string
	MICAlgorithm    string
	MICRule         string
	Disposition     string
	MDNMode         MDNMode
	MDNSigned       bool
	MDNURL          string
	MDNSignDigest   string
	MDNMessageID    string
	MDNContentType  string
	MDNBody         []byte
	PartnerSoftware string
	EDIINTFeatures  string
	Tolerances      string // notes, one a line
	// ContentSHA256 is the document's hex SHA-256; DuplicateContent is "", warned or
	// refused, DuplicateOf the row of the first copy (0 when none).
	ContentSHA256    string
	DuplicateContent string
	DuplicateOf      int64
	ReceivedAt       time.Time
	UpdatedAt        time.Time
}

const inboundCols = `id, instance, as2_from, as2_to, as2_message_id, as2_version, partner, organization,
	signature_digest, state, claim_token, message_id, file_name, file_name_sent, layers, cipher,
	key_transport, signature_algorithm, signature_scheme, mic, mic_algorithm, disposition,
	mdn_mode, mdn_signed, mdn_url, mdn_sign_digest, mdn_message_id, mdn_content_type, mdn_body,
	partner_software, ediint_features, tolerances, content_sha256, duplicate_content, duplicate_of, received_at, updated_at, mic_rule`

func scanInbound(tx module.Tx, row module.Row) (inboundRow, error) {
	var r inboundRow
	var sig sql.NullString
	var msgID, dupOf sql.NullInt64
	err := row.Scan(&r.ID, &r.Instance, &r.AS2From, &r.AS2To, &r.AS2MessageID, &r.AS2Version, &r.Partner,
		&r.Organization, &sig, &r.State, &r.ClaimToken, &msgID, &r.FileName, &r.FileNameSent, &r.Layers,
		&r.Cipher, &r.KeyTransport, &r.SignatureAlg, &r.SignatureScheme, &r.MIC, &r.MICAlgorithm,
		&r.Disposition, &r.MDNMode, &r.MDNSigned, &r.MDNURL, &r.MDNSignDigest, &r.MDNMessageID,
		&r.MDNContentType, &r.MDNBody, &r.PartnerSoftware, &r.EDIINTFeatures, &r.Tolerances,
		&r.ContentSHA256, &r.DuplicateContent, &dupOf, tx.ScanTime(&r.ReceivedAt), tx.ScanTime(&r.UpdatedAt), &r.MICRule)
	r.SignatureDigest = sig.String
	r.MessageID = msgID.Int64
	r.DuplicateOf = dupOf.Int64
	return r, err
}

// reserveOutcome is what reserving a row came to.
type reserveOutcome int

const (
	reserved          reserveOutcome = iota // the row is ours
	duplicate                               // the same (as2_from, Message-ID) is known: existing
	replay                                  // the signature is known under another Message-ID
	duplicateFilename                       // the file name repeats and the profile refuses it
	repeat                                  // reserved; the content repeats and the profile refuses it: existing is the first copy
	repeatBusy                              // the content repeats a copy still being stored: existing
)

// duplicateFilenameCheck is the profile's policy on repeated file names.
type duplicateFilenameCheck struct {
	refuse, warn bool
	window       time.Duration
}

// reserve inserts the row in state reserved unless a row with the same (as2_from,
// Message-ID) or signature exists, or the file name policy refuses it. The unique
// constraints decide races between concurrent requests: a losing insert is looked up
// again in a fresh transaction. On a warning the row's disposition is set before the
// insert. The transaction may be shared with other requests' writes (rowWriter).
func reserve(ctx context.Context, rows *rowWriter, row *inboundRow, check duplicateFilenameCheck, content duplicateContentCheck) (reserveOutcome, inboundRow, error) {
	disposition := row.Disposition
	dialect := rows.db.Dialect()
	for attempt := 0; ; attempt++ {
		var outcome reserveOutcome
		var existing inboundRow
		raced := false
		err := rows.write(ctx, func(ctx context.Context, tx module.Tx) error {
			outcome, existing, raced = reserved, inboundRow{}, false
			row.Disposition, row.DuplicateContent, row.DuplicateOf = disposition, "", 0
			found, err := tx.Query(ctx, `SELECT `+inboundCols+` FROM as2_inbound
				WHERE (as2_from = ? AND as2_message_id = ?) OR signature_digest = ?`,
				row.AS2From, row.AS2MessageID, nullString(row.SignatureDigest))
			if err != nil {
				return fmt.Errorf("look up AS2 message %s: %w", row.AS2MessageID, err)
			}
			var rows []inboundRow
			for found.Next() {
				r, err := scanInbound(tx, found)
				if err != nil {
					found.Close()
					return fmt.Errorf("read AS2 message: %w", err)
				}
				rows = append(rows, r)
			}
			found.Close()
			if err := found.Err(); err != nil {
				return fmt.Errorf("look up AS2 message %s: %w", row.AS2MessageID, err)
			}
			for _, r := range rows {
				if r.AS2From == row.AS2From && r.AS2MessageID == row.AS2MessageID {
					outcome, existing = duplicate, r
					return nil
				}
			}
			if len(rows) > 0 {
				outcome, existing = replay, rows[0]
				return nil
			}
			now := tx.Now()
			first, repeated, err := content.first(ctx, tx, dialect, row, now)
			if err != nil {
				return err
			}
			if repeated {
				switch {
				case content.refuse && first.State == stateReserved:
					outcome, existing = repeatBusy, first
					return nil
				case content.refuse:
					outcome, existing = repeat, first
					row.DuplicateContent = contentRefused
				default:
					existing = first
					row.DuplicateContent = contentWarned
				}
				row.DuplicateOf = first.ID
			}
			// A refused repeat is answered as the first copy was; its name repeats too.
			if outcome != repeat && row.FileNameSent && (check.refuse || check.warn) && check.window > 0 {
				var n int
				err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM as2_inbound
					WHERE partner = ? AND file_name = ? AND file_name_sent = ? AND received_at >= ?`,
					row.Partner, row.FileName, true, tx.Time(now.Add(-check.window))).Scan(&n)
				if err != nil {
					return fmt.Errorf("look up file name %q: %w", row.FileName, err)
				}
				if n > 0 && check.refuse {
					outcome = duplicateFilename
					return nil
				}
				if n > 0 {
					row.Disposition = duplicateFilenameWarning().String()
				}
			}
			row.State, row.ReceivedAt, row.UpdatedAt = stateReserved, now, now
			err = tx.QueryRow(ctx, `INSERT INTO as2_inbound (instance, as2_from, as2_to, as2_message_id, as2_version,
				partner, organization, signature_digest, state, claim_token, message_id, file_name, file_name_sent,
				layers, cipher, key_transport, signature_algorithm, signature_scheme, mic, mic_algorithm,
				disposition, mdn_mode, mdn_signed, mdn_url, mdn_sign_digest, mdn_message_id, mdn_content_type,
				mdn_body, partner_software, ediint_features, tolerances, content_sha256, duplicate_content, duplicate_of,
				received_at, updated_at, mic_rule)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				RETURNING id`,
				row.Instance, row.AS2From, row.AS2To, row.AS2MessageID, row.AS2Version, row.Partner, row.Organization,
				nullString(row.SignatureDigest), row.State, row.ClaimToken, row.FileName, row.FileNameSent,
				row.Layers, row.Cipher, row.KeyTransport, row.SignatureAlg, row.SignatureScheme, row.MIC,
				row.MICAlgorithm, row.Disposition, row.MDNMode, row.MDNSigned, row.MDNURL, row.MDNSignDigest,
				row.PartnerSoftware, row.EDIINTFeatures, row.Tolerances, row.ContentSHA256, row.DuplicateContent, nullID(row.DuplicateOf),
				tx.Time(now), tx.Time(now), row.MICRule).Scan(&row.ID)
			if tx.IsUniqueViolation(err) {
				raced = true
				return err
			}
			if err != nil {
				return fmt.Errorf("reserve AS2 message %s: %w", row.AS2MessageID, err)
			}
			if outcome != repeat {
				outcome = reserved
			}
			return nil
		})
		if raced && attempt < 3 {
			continue
		}
		if err != nil {
			return 0, inboundRow{}, err
		}
		return outcome, existing, nil
	}
}

// takeOver gives a stale reservation to a new owner; false when another took it first
// or it was finished meanwhile.
func takeOver(ctx context.Context, db module.SQL, id int64, oldToken, newToken string) (bool, error) {
	var ok bool
	err := db.Write(ctx, func(tx module.Tx) error {
		res, err := tx.Exec(ctx, `UPDATE as2_inbound SET claim_token = ?, updated_at = ?
			WHERE id = ? AND state = ? AND claim_token = ?`, newToken, tx.Time(tx.Now()), id, stateReserved, oldToken)
		if err != nil {
			return fmt.Errorf("take over AS2 message row %d: %w", id, err)
		}
		n, err := res.RowsAffected()
		ok = n == 1
		return err
	})
	return ok, err
}

// answer records the stored message and its MDN on a reserved row we own and, for an
// asynchronous MDN, queues its job, in one transaction. It reports false when the
// reservation was taken over meanwhile.
func answer(ctx context.Context, rows *rowWriter, row *inboundRow, job *mdnJob) (bool, error) {
	var ok bool
	var now time.Time
	err := rows.write(ctx, func(ctx context.Context, tx module.Tx) error {
		ok, now = false, tx.Now()
		res, err := tx.Exec(ctx, `UPDATE as2_inbound SET state = ?, message_id = ?, mdn_message_id = ?,
			mdn_content_type = ?, mdn_body = ?, updated_at = ?
			WHERE id = ? AND state = ? AND claim_token = ?`,
			stateAnswered, row.MessageID, row.MDNMessageID, row.MDNContentType, nullBytes(row.MDNBody),
			tx.Time(now), row.ID, stateReserved, row.ClaimToken)
		if err != nil {
			return fmt.Errorf("record MDN of AS2 message %s: %w", row.AS2MessageID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if ok = n == 1; !ok {
			return nil
		}
		if job != nil {
			job.InboundID = row.ID
			return insertJob(ctx, tx, job)
		}
		return nil
	})
	if err == nil && ok {
		row.State, row.UpdatedAt = stateAnswered, now
	}
	return ok, err
}

// saveMDN keeps an MDN built for an answered row that had none (its original asked for
// none), so later duplicates get the same bytes; the first to save wins.
func saveMDN(ctx context.Context, db module.SQL, row *inboundRow) error {
	return db.Write(ctx, func(tx module.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE as2_inbound SET mdn_message_id = ?, mdn_content_type = ?, mdn_body = ?, updated_at = ?
			WHERE id = ? AND mdn_body IS NULL`,
			row.MDNMessageID, row.MDNContentType, row.MDNBody, tx.Time(tx.Now()), row.ID)
		if err != nil {
			return fmt.Errorf("record MDN of AS2 message %s: %w", row.AS2MessageID, err)
		}
		return nil
	})
}

// release drops a reservation we own whose message could not be stored, so the
// partner's next attempt is taken afresh.
func release(ctx context.Context, db module.SQL, row inboundRow) error {
	return db.Write(ctx, func(tx module.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM as2_inbound WHERE id = ? AND state = ? AND claim_token = ?`,
			row.ID, stateReserved, row.ClaimToken); err != nil {
			return fmt.Errorf("release AS2 message row %d: %w", row.ID, err)
		}
		return nil
	})
}

// staleReservations lists the instance's reservations untouched since before.
func staleReservations(ctx context.Context, db module.SQL, instance persistence.InstanceName, before time.Time, limit int) ([]inboundRow, error) {
	var out []inboundRow
	err := db.Read(ctx, func(tx module.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `SELECT `+inboundCols+` FROM as2_inbound
			WHERE instance = ? AND state = ? AND updated_at < ? ORDER BY updated_at LIMIT ?`,
			instance, stateReserved, tx.Time(before), limit)
		if err != nil {
			return fmt.Errorf("list stale AS2 reservations: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanInbound(tx, rows)
			if err != nil {
				return fmt.Errorf("read AS2 reservation: %w", err)
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

// InboundRecord is what the AS2 receiver recorded about a message it took: the protocol
// panel of the message's detail.
type InboundRecord struct {
	AS2MessageID string    `json:"as2_message_id"`
	AS2From      string    `json:"as2_from"`
	AS2To        string    `json:"as2_to"`
	AS2Version   string    `json:"as2_version"`
	Instance     string    `json:"instance"`
	ReceivedAt   time.Time `json:"received_at"`
	// FileName is the stored name; FileNameSent tells whether the partner named it.
	FileName     string `json:"file_name"`
	FileNameSent bool   `json:"file_name_sent"`
	// Layers lists the protection, outermost first: encrypted, signed, compressed.
	Layers     []string `json:"layers"`
	Signed     bool     `json:"signed"`
	Encrypted  bool     `json:"encrypted"`
	Compressed bool     `json:"compressed"`
	// Cipher and KeyTransport describe the encryption ("" when unencrypted).
	Cipher       string `json:"cipher,omitempty"`
	KeyTransport string `json:"key_transport,omitempty"`
	// SignatureAlgorithm is the signature's digest and SignatureScheme its scheme (""
	// when unsigned).
	SignatureAlgorithm string `json:"signature_algorithm,omitempty"`
	SignatureScheme    string `json:"signature_scheme,omitempty"`
	// MIC is the Received-Content-MIC value without the algorithm, MICAlgorithm the
	// algorithm as written in the MDN.
	MIC          string `json:"mic"`
	MICAlgorithm string `json:"mic_algorithm"`
	// MICRule says how the MIC's algorithm was chosen (the partner profile's
	// mic_preference, and for auto the product recognised) and whether it mattered.
	MICRule     string `json:"mic_rule,omitempty"`
	Disposition string `json:"disposition"`
	// MDNMode is none, sync or async; MDNURL the asynchronous MDN's address.
	MDNMode   string `json:"mdn_mode"`
	MDNSigned bool   `json:"mdn_signed"`
	MDNURL    string `json:"mdn_url,omitempty"`
	// MDNStatus is none (none asked), sent, or for an asynchronous MDN pending, sent or
	// failed.
	MDNStatus    string `json:"mdn_status"`
	MDNMessageID string `json:"mdn_message_id,omitempty"`
	// PartnerSoftware is the partner's User-Agent (or Server) header.
	PartnerSoftware string `json:"partner_software"`
	EDIINTFeatures  string `json:"ediint_features"`
	// Tolerances say how parts of the message that depart from the standard were read
	// (for example RSASSA-PSS without parameters); absent when none did.
	Tolerances []string `json:"tolerances,omitempty"`
	// DuplicateContent is set on a document the partner had sent before within the
	// profile's duplicate_content window: warned (delivered again), and
	// DuplicateOfMessageID names the message that carried it first.
	DuplicateContent     string `json:"duplicate_content,omitempty"`
	DuplicateOfMessageID int64  `json:"duplicate_of_message_id,omitempty"`
	// RepeatsNotDelivered are the AS2 Message-IDs under which the partner sent this
	// message's document again, answered processed and not delivered again.
	RepeatsNotDelivered []string `json:"repeats_not_delivered,omitempty"`
}

// FindInbound returns what the receiver recorded about the stored message messageID; an
// error wrapping persistence.ErrNotFound when no AS2 receiver took it.
func FindInbound(ctx context.Context, db module.SQL, messageID int64) (InboundRecord, error) {
	var rec InboundRecord
	err := db.Read(ctx, func(tx module.Tx) error {
		row, err := scanInbound(tx, tx.QueryRow(ctx, `SELECT `+inboundCols+` FROM as2_inbound WHERE message_id = ?
			ORDER BY id LIMIT 1`, messageID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("AS2 record of message %d: %w", messageID, persistence.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("AS2 record of message %d: %w", messageID, err)
		}
		rec = row.record()
		if err := repeatsOf(ctx, tx, row, &rec); err != nil {
			return fmt.Errorf("AS2 record of message %d: %w", messageID, err)
		}
		switch {
		case row.MDNMode == MDNNone:
			rec.MDNStatus = "none"
		case row.MDNMode == MDNSync:
			rec.MDNStatus = "sent"
		default:
			var state string
			err := tx.QueryRow(ctx, `SELECT state FROM as2_mdn_jobs WHERE inbound_id = ? ORDER BY id DESC LIMIT 1`,
				row.ID).Scan(&state)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				rec.MDNStatus = "pending"
			case err != nil:
				return fmt.Errorf("AS2 MDN of message %d: %w", messageID, err)
			default:
				rec.MDNStatus = state
			}
		}
		return nil
	})
	return rec, err
}

func (r inboundRow) record() InboundRecord {
	rec := InboundRecord{
		AS2MessageID:       r.AS2MessageID,
		AS2From:            r.AS2From,
		AS2To:              r.AS2To,
		AS2Version:         r.AS2Version,
		Instance:           string(r.Instance),
		ReceivedAt:         r.ReceivedAt,
		FileName:           r.FileName,
		FileNameSent:       r.FileNameSent,
		Layers:             []string{},
		Cipher:             r.Cipher,
		KeyTransport:       r.KeyTransport,
		SignatureAlgorithm: r.SignatureAlg,
		SignatureScheme:    r.SignatureScheme,
		MIC:                r.MIC,
		MICAlgorithm:       r.MICAlgorithm,
		MICRule:            r.MICRule,
		Disposition:        r.Disposition,
		MDNMode:            string(r.MDNMode),
		MDNSigned:          r.MDNSigned,
		MDNURL:             r.MDNURL,
		MDNMessageID:       r.MDNMessageID,
		PartnerSoftware:    r.PartnerSoftware,
		EDIINTFeatures:     r.EDIINTFeatures,
	}
	if r.Layers != "" {
		rec.Layers = strings.Split(r.Layers, ",")
	}
	if r.Tolerances != "" {
		rec.Tolerances = strings.Split(r.Tolerances, "\n")
	}
	for _, l := range rec.Layers {
		switch l {
		case "signed":
			rec.Signed = true
		case "encrypted":
			rec.Encrypted = true
		case "compressed":
			rec.Compressed = true
		}
	}
	return rec
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
