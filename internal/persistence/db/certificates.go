package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

const (
	maxCertificateText = 1024 // subject, issuer
	maxDescription     = 200
	maxUseName         = 200
)

// useKindRE admits the kinds of records that use certificates: short lower-case words.
var useKindRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

func checkCertificate(c *persistence.Certificate) error {
	if err := checkSHA256("fingerprint", c.Fingerprint, false); err != nil {
		return err
	}
	switch {
	case len(c.DER) == 0:
		return fieldMsg("der", "is empty")
	case c.NotBefore.IsZero() || c.NotAfter.IsZero():
		return fieldMsg("not_after", "validity period is missing")
	}
	c.HasPrivateKey = len(c.SealedKey) > 0
	for _, f := range []struct{ name, v string }{{"subject", c.Subject}, {"issuer", c.Issuer}, {"serial_number", c.SerialNumber}} {
		if err := checkText(f.name, f.v, maxCertificateText); err != nil {
			return err
		}
	}
	if c.SealedKey == nil {
		c.SealedKey = []byte{}
	}
	return checkText("description", c.Description, maxDescription)
}

// CreateCertificates inserts certificates in one transaction. A fingerprint stored
// before, or given twice, is ErrConflict naming it; then nothing is written.
func (s *Store) CreateCertificates(ctx context.Context, certs []persistence.Certificate) ([]persistence.Certificate, error) {
	seen := make(map[string]bool, len(certs))
	for i := range certs {
		if err := checkCertificate(&certs[i]); err != nil {
			return nil, fmt.Errorf("create certificate: %w", err)
		}
		if seen[certs[i].Fingerprint] {
			return nil, fmt.Errorf("certificate %s is given twice: %w", certs[i].Fingerprint, persistence.ErrConflict)
		}
		seen[certs[i].Fingerprint] = true
	}
	var out []persistence.Certificate
	err := s.write(ctx, func(t *txn) error {
		out = make([]persistence.Certificate, 0, len(certs))
		for _, c := range certs {
			var id int64
			err := t.queryRow(ctx, `SELECT id FROM certificates WHERE fingerprint = ?`, c.Fingerprint).Scan(&id)
			switch {
			case err == nil:
				return fmt.Errorf("certificate %s already exists (id %d): %w", c.Fingerprint, id, persistence.ErrConflict)
			case !errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("create certificate %s: %w", c.Fingerprint, err)
			}
			created, err := scanCertificate(t.queryRow(ctx, `INSERT INTO certificates (fingerprint, subject, issuer,
				serial_number, not_before, not_after, description, der, sealed_key, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+certificateCols,
				c.Fingerprint, c.Subject, c.Issuer, c.SerialNumber, t.s.tv(c.NotBefore), t.s.tv(c.NotAfter),
				c.Description, c.DER, c.SealedKey, t.s.tv(t.now)))
			if isUniqueViolation(err) {
				return fmt.Errorf("certificate %s already exists: %w", c.Fingerprint, persistence.ErrConflict)
			}
			if err != nil {
				return fmt.Errorf("create certificate %s: %w", c.Fingerprint, err)
			}
			if err := t.auditCertificate(ctx, "create", nil, &created); err != nil {
				return err
			}
			out = append(out, created)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetCertificate returns one certificate with its DER and sealed key.
func (s *Store) GetCertificate(ctx context.Context, id int64) (persistence.Certificate, error) {
	var out persistence.Certificate
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanCertificate(t.queryRow(ctx, `SELECT `+certificateCols+` FROM certificates WHERE id = ?`, id))
		return notFound(err, "certificate %d", id)
	})
	return out, err
}

// ListCertificates lists certificates, soonest expiry first, with the total count.
func (s *Store) ListCertificates(ctx context.Context, opt persistence.ListOptions) ([]persistence.Certificate, int, error) {
	limit, offset := page(opt)
	var out []persistence.Certificate
	var total int
	err := s.read(ctx, func(t *txn) error {
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM certificates`).Scan(&total); err != nil {
			return fmt.Errorf("count certificates: %w", err)
		}
		rows, err := t.query(ctx, `SELECT `+certificateCols+` FROM certificates ORDER BY not_after, id LIMIT ? OFFSET ?`,
			limit, offset)
		out, err = collect(rows, err, scanCertificate)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list certificates: %w", err)
	}
	return out, total, nil
}

// DeleteCertificate deletes a certificate no record uses.
func (s *Store) DeleteCertificate(ctx context.Context, id int64) error {
	return s.write(ctx, func(t *txn) error {
		before, err := scanCertificate(t.queryRow(ctx, `SELECT `+certificateCols+` FROM certificates WHERE id = ?`+t.s.lockRows, id))
		if err != nil {
			return notFound(err, "certificate %d", id)
		}
		u, err := scanCertificateUse(t.queryRow(ctx, `SELECT `+certificateUseCols+` FROM certificate_uses
			WHERE certificate_id = ? ORDER BY kind, name LIMIT 1`, id))
		switch {
		case err == nil:
			return fmt.Errorf("certificate %d is used by %s %q: %w", id, u.Kind, u.Name, persistence.ErrInUse)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("delete certificate %d: %w", id, err)
		}
		_, err = t.exec(ctx, `DELETE FROM certificates WHERE id = ?`, id)
		if isForeignKeyViolation(err) {
			return fmt.Errorf("certificate %d is in use: %w", id, persistence.ErrInUse)
		}
		if err != nil {
			return fmt.Errorf("delete certificate %d: %w", id, err)
		}
		return t.auditCertificate(ctx, "delete", &before, nil)
	})
}

// auditCertificate records a certificate stored or deleted: what identifies it, and its
// private key only as present.
func (t *txn) auditCertificate(ctx context.Context, action string, before, after *persistence.Certificate) error {
	type view struct {
		Fingerprint  string    `json:"fingerprint"`
		Subject      string    `json:"subject"`
		Issuer       string    `json:"issuer"`
		SerialNumber string    `json:"serial_number"`
		NotBefore    time.Time `json:"not_before"`
		NotAfter     time.Time `json:"not_after"`
		Description  string    `json:"description"`
	}
	var b, a any
	c := after
	if before != nil {
		c = before
		b = view{before.Fingerprint, before.Subject, before.Issuer, before.SerialNumber, before.NotBefore, before.NotAfter, before.Description}
	}
	if after != nil {
		a = view{after.Fingerprint, after.Subject, after.Issuer, after.SerialNumber, after.NotBefore, after.NotAfter, after.Description}
	}
	changes, err := audit.Diff(b, a)
	if err != nil {
		return fmt.Errorf("audit %s certificate %d: %w", action, c.ID, err)
	}
	if len(c.SealedKey) > 0 {
		changes = append(changes, audit.SecretChange("private_key"))
	}
	return t.audit(ctx, action, "certificate", strconv.FormatInt(c.ID, 10), c.Subject, changes)
}

// SetCertificateUses replaces the certificates the record (kind, name) uses.
func (s *Store) SetCertificateUses(ctx context.Context, kind, name string, ids []int64) error {
	if !useKindRE.MatchString(kind) {
		return fmt.Errorf("set certificate uses: %w", fieldMsg("kind", "use 1 to 64 of a-z, 0-9, _ and -"))
	}
	if name == "" {
		return fmt.Errorf("set certificate uses: %w", fieldMsg("name", "is empty"))
	}
	if err := checkText("name", name, maxUseName); err != nil {
		return fmt.Errorf("set certificate uses: %w", err)
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return s.write(ctx, func(t *txn) error {
		if len(ids) > 0 {
			// Locking the certificates keeps a concurrent delete from slipping between
			// this check and the insert.
			cond, arg := t.s.idList("id", ids)
			rows, err := t.query(ctx, `SELECT id FROM certificates WHERE `+cond+` ORDER BY id`+t.s.lockRows, arg)
			found, err := collect(rows, err, scanID)
			if err != nil {
				return fmt.Errorf("set certificate uses of %s %q: %w", kind, name, err)
			}
			for _, id := range ids {
				if !slices.Contains(found, id) {
					return fmt.Errorf("set certificate uses of %s %q: %w", kind, name,
						fieldMsg("certificate_id", "certificate %d does not exist", id))
				}
			}
		}
		if _, err := t.exec(ctx, `DELETE FROM certificate_uses WHERE kind = ? AND name = ?`, kind, name); err != nil {
			return fmt.Errorf("set certificate uses of %s %q: %w", kind, name, err)
		}
		rows := make([][]any, len(ids))
		for i, id := range ids {
			rows[i] = []any{id, kind, name}
		}
		if err := t.insertRows(ctx, `INSERT INTO certificate_uses (`+certificateUseCols+`)`, 3, rows); err != nil {
			return fmt.Errorf("set certificate uses of %s %q: %w", kind, name, err)
		}
		return nil
	})
}

// ListCertificateUses lists the records that use a certificate, by kind and name.
func (s *Store) ListCertificateUses(ctx context.Context, id int64) ([]persistence.CertificateUse, error) {
	var out []persistence.CertificateUse
	err := s.read(ctx, func(t *txn) error {
		var one int64
		if err := t.queryRow(ctx, `SELECT id FROM certificates WHERE id = ?`, id).Scan(&one); err != nil {
			return notFound(err, "certificate %d", id)
		}
		rows, err := t.query(ctx, `SELECT `+certificateUseCols+` FROM certificate_uses WHERE certificate_id = ?
			ORDER BY kind, name`, id)
		out, err = collect(rows, err, scanCertificateUse)
		if err != nil {
			return fmt.Errorf("list uses of certificate %d: %w", id, err)
		}
		return nil
	})
	return out, err
}

func scanID(r rowScanner) (int64, error) {
	var id int64
	err := r.Scan(&id)
	return id, err
}
