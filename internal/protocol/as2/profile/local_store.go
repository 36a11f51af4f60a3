package profile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

const localCols = `organization, as2_id, signing_certificate_id, decryption_certificate_id,
	previous_decryption_certificate_id, mdn_notification_to, max_message_size_mib, mdn_signing_certificate_id,
	include_chain, created_at, updated_at`

func scanLocal(tx module.Tx, row module.Row) (Local, error) {
	var l Local
	var prev, mdn sql.NullInt64
	err := row.Scan(&l.Organization, &l.AS2ID, &l.SigningCertificateID, &l.DecryptionCertificateID,
		&prev, &l.MDNNotificationTo, &l.MaxMessageSizeMiB, &mdn, &l.IncludeChain, tx.ScanTime(&l.CreatedAt), tx.ScanTime(&l.UpdatedAt))
	if prev.Valid {
		l.PreviousDecryptionCertificateID = &prev.Int64
	}
	if mdn.Valid {
		l.MDNSigningCertificateID = &mdn.Int64
	}
	return l, err
}

func getLocal(ctx context.Context, tx module.Tx, where string, arg any) (Local, error) {
	return scanLocal(tx, tx.QueryRow(ctx, `SELECT `+localCols+` FROM as2_local_profiles WHERE `+where, arg))
}

// prepareLocal validates l and everything it references, before anything is written.
func (s *Store) prepareLocal(ctx context.Context, l Local) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if err := s.checkParty(ctx, persistence.PartyOrganization, l.Organization); err != nil {
		return err
	}
	parsed, err := s.checkCertificates(ctx, l.certRefs())
	if err != nil || !l.IncludeChain {
		return err
	}
	// The chain must be found for each certificate that signs for the organization.
	ids := []int64{l.SigningCertificateID}
	if l.MDNSigningCertificateID != nil {
		ids = append(ids, *l.MDNSigningCertificateID)
	}
	for _, id := range ids {
		if id == 0 {
			continue
		}
		if _, err := issuerChain(ctx, s.core, parsed[id]); err != nil {
			return fieldErr("include_chain", err.Error())
		}
	}
	return nil
}

// checkLocalConflicts refuses a second profile for the organization (on create) and an
// AS2 id another organization has.
func checkLocalConflicts(ctx context.Context, tx module.Tx, l Local, creating bool) error {
	if creating {
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM as2_local_profiles WHERE organization = ?`, l.Organization).Scan(&n); err != nil {
			return fmt.Errorf("check AS2 local profile of %q: %w", l.Organization, err)
		}
		if n > 0 {
			return &ConflictError{Code: CodeProfileExists,
				Message: fmt.Sprintf("organization %q already has an AS2 local profile", l.Organization),
				Details: map[string]any{"organization": string(l.Organization)}}
		}
	}
	var owner string
	err := tx.QueryRow(ctx, `SELECT organization FROM as2_local_profiles WHERE as2_id = ? AND organization <> ?`,
		l.AS2ID, l.Organization).Scan(&owner)
	switch {
	case err == nil:
		return as2IDTaken(l.AS2ID, "local", owner)
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("check AS2 id %q: %w", l.AS2ID, err)
	}
	return nil
}

// CreateLocal stores an organization's local profile. A missing organization or
// certificate is a FieldError; a second profile for the organization or a taken AS2 id is
// a ConflictError.
func (s *Store) CreateLocal(ctx context.Context, l Local) (Local, error) {
	if err := s.prepareLocal(ctx, l); err != nil {
		return Local{}, fmt.Errorf("create AS2 local profile: %w", err)
	}
	if err := s.sql.Read(ctx, func(tx module.Tx) error { return checkLocalConflicts(ctx, tx, l, true) }); err != nil {
		return Local{}, fmt.Errorf("create AS2 local profile: %w", err)
	}
	if err := s.setUses(ctx, UseLocalProfile, l.Organization, certIDs(l.certRefs())); err != nil {
		return Local{}, fmt.Errorf("create AS2 local profile: %w", err)
	}
	var out Local
	err := s.sql.Write(ctx, func(tx module.Tx) error {
		if err := checkLocalConflicts(ctx, tx, l, true); err != nil {
			return err
		}
		now := tx.Now()
		var err error
		out, err = scanLocal(tx, tx.QueryRow(ctx, `INSERT INTO as2_local_profiles (`+localCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+localCols,
			l.Organization, l.AS2ID, l.SigningCertificateID, l.DecryptionCertificateID,
			nullID(l.PreviousDecryptionCertificateID), l.MDNNotificationTo, l.MaxMessageSizeMiB, nullID(l.MDNSigningCertificateID),
			l.IncludeChain, tx.Time(now), tx.Time(now)))
		if tx.IsUniqueViolation(err) {
			return fmt.Errorf("organization %q or AS2 id %q was taken meanwhile: %w", l.Organization, l.AS2ID, persistence.ErrConflict)
		}
		if err != nil {
			return err
		}
		return tx.Audit(ctx, "create", AuditKindLocal, string(out.Organization), string(out.Organization), nil, out)
	})
	if err = s.afterWrite(ctx, UseLocalProfile, l.Organization, err); err != nil {
		return Local{}, fmt.Errorf("create AS2 local profile: %w", err)
	}
	s.changed()
	return out, nil
}

// GetLocal returns an organization's local profile.
func (s *Store) GetLocal(ctx context.Context, org persistence.PartyName) (Local, error) {
	var out Local
	err := s.sql.Read(ctx, func(tx module.Tx) (err error) {
		out, err = getLocal(ctx, tx, `organization = ?`, org)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Local{}, notFoundParty(persistence.PartyOrganization, org, "local")
	}
	if err != nil {
		return Local{}, fmt.Errorf("get AS2 local profile of %q: %w", org, err)
	}
	return out, nil
}

// LocalByAS2ID returns the local profile with the AS2 id.
func (s *Store) LocalByAS2ID(ctx context.Context, id AS2ID) (Local, error) {
	var out Local
	err := s.sql.Read(ctx, func(tx module.Tx) (err error) {
		out, err = getLocal(ctx, tx, `as2_id = ?`, string(id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Local{}, fmt.Errorf("no AS2 local profile has AS2 id %q: %w", id, persistence.ErrNotFound)
	}
	if err != nil {
		return Local{}, fmt.Errorf("find AS2 local profile by AS2 id %q: %w", id, err)
	}
	return out, nil
}

// ListLocals lists local profiles by organization, with the total count.
func (s *Store) ListLocals(ctx context.Context, opt persistence.ListOptions) ([]Local, int, error) {
	limit, offset := listPage(opt)
	out := []Local{}
	var total int
	err := s.sql.Read(ctx, func(tx module.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM as2_local_profiles`).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+localCols+` FROM as2_local_profiles ORDER BY organization LIMIT ? OFFSET ?`, limit, offset)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			l, err := scanLocal(tx, rows)
			if err != nil {
				return err
			}
			out = append(out, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list AS2 local profiles: %w", err)
	}
	return out, total, nil
}

// UpdateLocal replaces an organization's local profile (l.Organization names it).
func (s *Store) UpdateLocal(ctx context.Context, l Local) (Local, error) {
	if err := s.prepareLocal(ctx, l); err != nil {
		return Local{}, fmt.Errorf("update AS2 local profile: %w", err)
	}
	var old Local
	err := s.sql.Read(ctx, func(tx module.Tx) (err error) {
		if old, err = getLocal(ctx, tx, `organization = ?`, l.Organization); err != nil {
			return err
		}
		return checkLocalConflicts(ctx, tx, l, false)
	})
	if errors.Is(err, sql.ErrNoRows) {
		err = notFoundParty(persistence.PartyOrganization, l.Organization, "local")
	}
	if err != nil {
		return Local{}, fmt.Errorf("update AS2 local profile: %w", err)
	}
	// Until the row names the new certificates, the old ones stay protected as well.
	both := certIDs(append(old.certRefs(), l.certRefs()...))
	if err := s.setUses(ctx, UseLocalProfile, l.Organization, both); err != nil {
		return Local{}, fmt.Errorf("update AS2 local profile: %w", err)
	}
	var out Local
	err = s.sql.Write(ctx, func(tx module.Tx) error {
		if err := checkLocalConflicts(ctx, tx, l, false); err != nil {
			return err
		}
		before, err := getLocal(ctx, tx, `organization = ?`, l.Organization)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundParty(persistence.PartyOrganization, l.Organization, "local")
		}
		if err != nil {
			return err
		}
		out, err = scanLocal(tx, tx.QueryRow(ctx, `UPDATE as2_local_profiles SET as2_id = ?, signing_certificate_id = ?,
			decryption_certificate_id = ?, previous_decryption_certificate_id = ?, mdn_notification_to = ?,
			max_message_size_mib = ?, mdn_signing_certificate_id = ?, include_chain = ?, updated_at = ?
			WHERE organization = ? RETURNING `+localCols,
			l.AS2ID, l.SigningCertificateID, l.DecryptionCertificateID, nullID(l.PreviousDecryptionCertificateID),
			l.MDNNotificationTo, l.MaxMessageSizeMiB, nullID(l.MDNSigningCertificateID), l.IncludeChain, tx.Time(tx.Now()),
			l.Organization))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return notFoundParty(persistence.PartyOrganization, l.Organization, "local")
		case tx.IsUniqueViolation(err):
			return fmt.Errorf("AS2 id %q was taken meanwhile: %w", l.AS2ID, persistence.ErrConflict)
		case err != nil:
			return err
		}
		return tx.Audit(ctx, "update", AuditKindLocal, string(out.Organization), string(out.Organization), before, out)
	})
	if err = s.afterWrite(ctx, UseLocalProfile, l.Organization, err); err != nil {
		return Local{}, fmt.Errorf("update AS2 local profile: %w", err)
	}
	s.changed()
	return out, nil
}

// DeleteLocal removes an organization's local profile and releases its certificates.
func (s *Store) DeleteLocal(ctx context.Context, org persistence.PartyName) error {
	err := s.sql.Write(ctx, func(tx module.Tx) error {
		before, err := getLocal(ctx, tx, `organization = ?`, org)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundParty(persistence.PartyOrganization, org, "local")
		}
		if err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `DELETE FROM as2_local_profiles WHERE organization = ?`, org)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, notFoundParty(persistence.PartyOrganization, org, "local"))
		}
		return tx.Audit(ctx, "delete", AuditKindLocal, string(org), string(org), before, nil)
	})
	if err != nil {
		return fmt.Errorf("delete AS2 local profile: %w", err)
	}
	s.changed()
	if err := s.syncUses(ctx, UseLocalProfile, org); err != nil {
		return fmt.Errorf("AS2 local profile of %q deleted, but its certificates are still marked as used: %w", org, err)
	}
	return nil
}
