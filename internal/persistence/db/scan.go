package db

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"wharf/internal/persistence"
)

// Column lists and their scanners, one per record. Domain string types scan through
// their own Scan methods, so a value the domain refuses fails here, naming the row.

type rowScanner interface{ Scan(dest ...any) error }

func closeRows(rows *sql.Rows) error {
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}

const partyCols = `id, kind, name, display_name, created_at, updated_at`

func scanParty(r rowScanner) (persistence.Party, error) {
	var p persistence.Party
	err := r.Scan(&p.ID, &p.Kind, &p.Name, &p.DisplayName, timeCol{&p.CreatedAt}, timeCol{&p.UpdatedAt})
	if err != nil {
		return p, fmt.Errorf("read party: %w", err)
	}
	return p, nil
}

const pluginCols = `name, type, enabled, config, secrets, created_at, updated_at`

func scanPlugin(r rowScanner) (persistence.PluginConfig, error) {
	var c persistence.PluginConfig
	var config string
	err := r.Scan(&c.Name, &c.Type, &c.Enabled, &config, &c.Secrets, timeCol{&c.CreatedAt}, timeCol{&c.UpdatedAt})
	if err != nil {
		return c, fmt.Errorf("read plugin config: %w", err)
	}
	c.Config = []byte(config)
	if len(c.Secrets) == 0 {
		c.Secrets = nil
	}
	return c, nil
}

const routeCols = `id, source, from_party, to_party, target, ordered, session_by, created_at, retry_policy`

func scanRoute(r rowScanner) (persistence.Route, error) {
	var rt persistence.Route
	err := r.Scan(&rt.ID, &rt.Source, &rt.From, &rt.To, &rt.Target, &rt.Ordered, &rt.SessionBy, timeCol{&rt.CreatedAt}, policyCol{&rt.Retry})
	if err != nil {
		return rt, fmt.Errorf("read route: %w", err)
	}
	return rt, nil
}

const messageCols = `id, stage, status, refusal, from_party, to_party, source, original_file_name, size, sha256, correlation_id, origin_event_id, metadata, created_at, updated_at, trace_parent, erased_at`

func scanMessage(r rowScanner) (persistence.Message, error) {
	var m persistence.Message
	var meta string
	if err := r.Scan(messageDests(&m, &meta)...); err != nil {
		return m, fmt.Errorf("read message: %w", err)
	}
	return m, decodeMessageMetadata(&m, meta)
}

// messageDests are the destinations of messageCols; the metadata goes to meta, for
// decodeMessageMetadata.
func messageDests(m *persistence.Message, meta *string) []any {
	return []any{&m.ID, &m.Stage, &m.Status, &m.Refusal, &m.From, &m.To, &m.Source, &m.OriginalFileName,
		&m.Size, &m.SHA256, &m.CorrelationID, &m.OriginEventID, meta, timeCol{&m.CreatedAt}, timeCol{&m.UpdatedAt}, &m.TraceParent,
		nullTimeCol{&m.ErasedAt}}
}

func decodeMessageMetadata(m *persistence.Message, meta string) error {
	var err error
	if m.Metadata, err = decodeMetadata(meta); err != nil {
		return fmt.Errorf("read message %d: %w", m.ID, err)
	}
	return nil
}

// encodeMetadata is the metadata column's text: a JSON object, {} when empty.
func encodeMetadata(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m) // a map of strings always encodes
	return string(b)
}

func decodeMetadata(s string) (map[string]string, error) {
	if s == "" || s == "{}" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return m, nil
}

const payloadCols = `message_id, stage, key, size, sha256, created_at`

func scanPayload(r rowScanner) (persistence.Payload, error) {
	var p persistence.Payload
	err := r.Scan(&p.MessageID, &p.Stage, &p.Key, &p.Size, &p.SHA256, timeCol{&p.CreatedAt})
	if err != nil {
		return p, fmt.Errorf("read payload: %w", err)
	}
	return p, nil
}

const deliveryCols = `id, message_id, target, state, attempts, next_attempt_at, last_error, wakeups, next_wakeup_at, lease_until, claim_token, ack_deadline, session_key, created_at, updated_at, external_ref, retry_policy, error_class, correlation_id, origin_event_id`

func deliveryDests(d *persistence.Delivery) []any {
	return []any{&d.ID, &d.MessageID, &d.Target, &d.State, &d.Attempts, nullTimeCol{&d.NextAttemptAt},
		&d.LastError, &d.Wakeups, nullTimeCol{&d.NextWakeupAt}, nullTimeCol{&d.LeaseUntil}, &d.ClaimToken,
		nullTimeCol{&d.AckDeadline}, &d.SessionKey, timeCol{&d.CreatedAt}, timeCol{&d.UpdatedAt}, &d.ExternalRef,
		policyCol{&d.Retry}, &d.ErrorClass, &d.CorrelationID, &d.OriginEventID}
}

func scanDelivery(r rowScanner) (persistence.Delivery, error) {
	var d persistence.Delivery
	if err := r.Scan(deliveryDests(&d)...); err != nil {
		return d, fmt.Errorf("read delivery: %w", err)
	}
	return d, nil
}

// transitionCols is what a transition statement returns: the delivery as it is now, and
// the state it left.
const transitionCols = deliveryCols + `, previous_state`

type transition struct {
	d    persistence.Delivery
	from persistence.DeliveryState
}

func scanTransition(r rowScanner) (transition, error) {
	var tr transition
	if err := r.Scan(append(deliveryDests(&tr.d), &tr.from)...); err != nil {
		return tr, fmt.Errorf("read delivery: %w", err)
	}
	return tr, nil
}

const historyCols = `id, message_id, delivery_id, at, kind, from_state, to_state, reason, actor, reported_at, correlation_id, origin_event_id`

func scanHistory(r rowScanner) (persistence.HistoryEntry, error) {
	var h persistence.HistoryEntry
	var did sql.NullInt64
	var kind string
	err := r.Scan(&h.ID, &h.MessageID, &did, timeCol{&h.At}, &kind, &h.FromState, &h.ToState, &h.Reason, &h.Actor, nullTimeCol{&h.ReportedAt}, &h.CorrelationID, &h.OriginEventID)
	if err != nil {
		return h, fmt.Errorf("read history: %w", err)
	}
	h.Kind = persistence.HistoryKind(kind)
	if did.Valid {
		h.DeliveryID = &did.Int64
	}
	return h, nil
}

const tokenCols = `id, name, hash, created_at, last_used_at, revoked_at, scope_target`

func scanToken(r rowScanner) (persistence.APIToken, error) {
	var tk persistence.APIToken
	var target string // '' for an unscoped token, which InstanceName refuses
	err := r.Scan(&tk.ID, &tk.Name, &tk.Hash, timeCol{&tk.CreatedAt}, nullTimeCol{&tk.LastUsedAt}, nullTimeCol{&tk.RevokedAt}, &target)
	if err != nil {
		return tk, fmt.Errorf("read API token: %w", err)
	}
	if target != "" {
		if tk.Target, err = persistence.ParseInstanceName(target); err != nil {
			return tk, fmt.Errorf("read API token %q: scope: %w", tk.Name, err)
		}
	}
	return tk, nil
}

// collect reads every row with scan.
func collect[T any](rows *sql.Rows, err error, scan func(rowScanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, v)
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}
	return out, nil
}

const certificateCols = `id, fingerprint, subject, issuer, serial_number, not_before, not_after, description, der, sealed_key, created_at`

func scanCertificate(r rowScanner) (persistence.Certificate, error) {
	var c persistence.Certificate
	err := r.Scan(&c.ID, &c.Fingerprint, &c.Subject, &c.Issuer, &c.SerialNumber, timeCol{&c.NotBefore},
		timeCol{&c.NotAfter}, &c.Description, &c.DER, &c.SealedKey, timeCol{&c.CreatedAt})
	if err != nil {
		return c, fmt.Errorf("read certificate: %w", err)
	}
	if len(c.SealedKey) == 0 {
		c.SealedKey = nil
	}
	c.HasPrivateKey = c.SealedKey != nil
	return c, nil
}

const certificateUseCols = `certificate_id, kind, name`

func scanCertificateUse(r rowScanner) (persistence.CertificateUse, error) {
	var u persistence.CertificateUse
	if err := r.Scan(&u.CertificateID, &u.Kind, &u.Name); err != nil {
		return u, fmt.Errorf("read certificate use: %w", err)
	}
	return u, nil
}
