package profile

import (
	"context"
	"crypto/rsa"
	"database/sql"
	"errors"
	"fmt"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

const remoteCols = `partner, as2_id, endpoint_url, partner_certificate_ids, our_signing_certificate_id,
	our_decryption_certificate_id, compress, signing_algorithm, encryption_algorithm, key_transport, mdn_mode,
	signed_mdn, mdn_mic_algorithm, async_mdn_url, require_signed, require_encrypted, allow_sha1, mic_preference,
	async_mdn_hosts, duplicate_filename, duplicate_filename_window_hours, connect_timeout_seconds,
	request_timeout_seconds, receipt_timeout_minutes, retry, tls_trust_certificate_ids, max_message_size_mib,
	compression_order, algorithm_protection, tls_trust, tls_pinned_sha256,
	gcm_confirmed, duplicate_content, duplicate_content_window_hours, correlation_header, chunked, created_at, updated_at`

// remoteRow is a remote profile as its columns hold it.
type remoteRow struct {
	partnerIDs, hosts, retry, trustIDs string
	ourSigning, ourDecryption          sql.NullInt64
}

func scanRemote(tx module.Tx, row module.Row) (Remote, error) {
	var r Remote
	var c remoteRow
	err := row.Scan(&r.Partner, &r.AS2ID, &r.EndpointURL, &c.partnerIDs, &c.ourSigning, &c.ourDecryption,
		&r.Compress, &r.SigningAlgorithm, &r.EncryptionAlgorithm, &r.KeyTransport, &r.MDNMode, &r.SignedMDN,
		&r.MDNMICAlgorithm, &r.AsyncMDNURL, &r.RequireSigned, &r.RequireEncrypted, &r.AllowSHA1, &r.MICPreference,
		&c.hosts, &r.DuplicateFilename, &r.DuplicateFilenameWindowH, &r.ConnectTimeoutSeconds,
		&r.RequestTimeoutSeconds, &r.ReceiptTimeoutMinutes, &c.retry, &c.trustIDs, &r.MaxMessageSizeMiB,
		&r.CompressionOrder, &r.AlgorithmProtection, &r.TLSTrust, &r.TLSPinnedSHA256,
		&r.GCMConfirmed, &r.DuplicateContent, &r.DuplicateContentWindowH, &r.CorrelationHeader, &r.Chunked, tx.ScanTime(&r.CreatedAt), tx.ScanTime(&r.UpdatedAt))
	if err != nil {
		return Remote{}, err
	}
	if c.ourSigning.Valid {
		r.OurSigningCertificateID = &c.ourSigning.Int64
	}
	if c.ourDecryption.Valid {
		r.OurDecryptionCertificateID = &c.ourDecryption.Int64
	}
	for _, f := range []struct {
		src  string
		dst  any
		what string
	}{
		{c.partnerIDs, &r.PartnerCertificateIDs, "partner_certificate_ids"},
		{c.hosts, &r.AsyncMDNHosts, "async_mdn_hosts"},
		{c.retry, &r.Retry, "retry"},
		{c.trustIDs, &r.TLSTrustCertificateIDs, "tls_trust_certificate_ids"},
	} {
		if err := unmarshalJSON(f.src, f.dst, f.what); err != nil {
			return Remote{}, fmt.Errorf("AS2 remote profile of %q: %w", r.Partner, err)
		}
	}
	return r.normalized(), nil
}

// normalized gives the list fields empty lists instead of nil, so they are [] in JSON.
func (r Remote) normalized() Remote {
	if r.PartnerCertificateIDs == nil {
		r.PartnerCertificateIDs = []int64{}
	}
	if r.AsyncMDNHosts == nil {
		r.AsyncMDNHosts = []string{}
	}
	if r.TLSTrustCertificateIDs == nil {
		r.TLSTrustCertificateIDs = []int64{}
	}
	r.TLSPinnedSHA256 = NormalizeFingerprint(r.TLSPinnedSHA256)
	return r
}

// columns returns the values of the list columns as JSON text.
func (r Remote) columns() (remoteRow, error) {
	var c remoteRow
	var err error
	r = r.normalized()
	if c.partnerIDs, err = marshalJSON(r.PartnerCertificateIDs); err != nil {
		return c, err
	}
	if c.hosts, err = marshalJSON(r.AsyncMDNHosts); err != nil {
		return c, err
	}
	if c.retry, err = marshalJSON(r.Retry); err != nil {
		return c, err
	}
	c.trustIDs, err = marshalJSON(r.TLSTrustCertificateIDs)
	return c, err
}

func getRemote(ctx context.Context, tx module.Tx, where string, arg any) (Remote, error) {
	return scanRemote(tx, tx.QueryRow(ctx, `SELECT `+remoteCols+` FROM as2_remote_profiles WHERE `+where, arg))
}

// prepareRemote validates r and everything it references, before anything is written.
func (s *Store) prepareRemote(ctx context.Context, r Remote) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := s.checkParty(ctx, persistence.PartyPartner, r.Partner); err != nil {
		return err
	}
	parsed, err := s.checkCertificates(ctx, r.certRefs())
	if err != nil {
		return err
	}
	if r.EncryptionAlgorithm != EncryptNone {
		for _, id := range r.PartnerCertificateIDs {
			if _, ok := parsed[id].PublicKey.(*rsa.PublicKey); ok {
				return nil
			}
		}
		return fieldErr("partner_certificate_ids", "encryption needs a partner certificate with an RSA key; AS2 key transport encrypts to RSA keys only")
	}
	return nil
}

// checkRemoteConflicts refuses a second profile for the partner (on create) and an AS2
// id another partner has.
func checkRemoteConflicts(ctx context.Context, tx module.Tx, r Remote, creating bool) error {
	if creating {
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM as2_remote_profiles WHERE partner = ?`, r.Partner).Scan(&n); err != nil {
			return fmt.Errorf("check AS2 remote profile of %q: %w", r.Partner, err)
		}
		if n > 0 {
			return &ConflictError{Code: CodeProfileExists,
				Message: fmt.Sprintf("partner %q already has an AS2 remote profile", r.Partner),
				Details: map[string]any{"partner": string(r.Partner)}}
		}
	}
	var owner string
	err := tx.QueryRow(ctx, `SELECT partner FROM as2_remote_profiles WHERE as2_id = ? AND partner <> ?`,
		r.AS2ID, r.Partner).Scan(&owner)
	switch {
	case err == nil:
		return as2IDTaken(r.AS2ID, "remote", owner)
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("check AS2 id %q: %w", r.AS2ID, err)
	}
	return nil
}

// CreateRemote stores a partner's remote profile. A missing partner or certificate is a
// FieldError; a second profile for the partner or a taken AS2 id is a ConflictError.
func (s *Store) CreateRemote(ctx context.Context, r Remote) (Remote, error) {
	r = r.normalized()
	if err := s.prepareRemote(ctx, r); err != nil {
		return Remote{}, fmt.Errorf("create AS2 remote profile: %w", err)
	}
	c, err := r.columns()
	if err != nil {
		return Remote{}, fmt.Errorf("create AS2 remote profile: %w", err)
	}
	if err := s.sql.Read(ctx, func(tx module.Tx) error { return checkRemoteConflicts(ctx, tx, r, true) }); err != nil {
		return Remote{}, fmt.Errorf("create AS2 remote profile: %w", err)
	}
	if err := s.setUses(ctx, UseRemoteProfile, r.Partner, certIDs(r.certRefs())); err != nil {
		return Remote{}, fmt.Errorf("create AS2 remote profile: %w", err)
	}
	var out Remote
	err = s.sql.Write(ctx, func(tx module.Tx) error {
		if err := checkRemoteConflicts(ctx, tx, r, true); err != nil {
			return err
		}
		now := tx.Now()
		var err error
		out, err = scanRemote(tx, tx.QueryRow(ctx, `INSERT INTO as2_remote_profiles (`+remoteCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			RETURNING `+remoteCols,
			r.Partner, r.AS2ID, r.EndpointURL, c.partnerIDs, nullID(r.OurSigningCertificateID),
			nullID(r.OurDecryptionCertificateID), r.Compress, r.SigningAlgorithm, r.EncryptionAlgorithm,
			r.KeyTransport, r.MDNMode, r.SignedMDN, r.MDNMICAlgorithm, r.AsyncMDNURL, r.RequireSigned,
			r.RequireEncrypted, r.AllowSHA1, r.MICPreference, c.hosts, r.DuplicateFilename,
			r.DuplicateFilenameWindowH, r.ConnectTimeoutSeconds, r.RequestTimeoutSeconds,
			r.ReceiptTimeoutMinutes, c.retry, c.trustIDs, r.MaxMessageSizeMiB, r.CompressionOrder, r.AlgorithmProtection, r.TLSTrust, r.TLSPinnedSHA256,
			r.GCMConfirmed, r.DuplicateContent, r.DuplicateContentWindowH, r.CorrelationHeader, r.Chunked, tx.Time(now), tx.Time(now)))
		if tx.IsUniqueViolation(err) {
			return fmt.Errorf("partner %q or AS2 id %q was taken meanwhile: %w", r.Partner, r.AS2ID, persistence.ErrConflict)
		}
		if err != nil {
			return err
		}
		return tx.Audit(ctx, "create", AuditKindRemote, string(out.Partner), string(out.Partner), nil, out)
	})
	if err = s.afterWrite(ctx, UseRemoteProfile, r.Partner, err); err != nil {
		return Remote{}, fmt.Errorf("create AS2 remote profile: %w", err)
	}
	s.changed()
	return out, nil
}

// GetRemote returns a partner's remote profile.
func (s *Store) GetRemote(ctx context.Context, partner persistence.PartyName) (Remote, error) {
	var out Remote
	err := s.sql.Read(ctx, func(tx module.Tx) (err error) {
		out, err = getRemote(ctx, tx, `partner = ?`, partner)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Remote{}, notFoundParty(persistence.PartyPartner, partner, "remote")
	}
	if err != nil {
		return Remote{}, fmt.Errorf("get AS2 remote profile of %q: %w", partner, err)
	}
	return out, nil
}

// RemoteByAS2ID returns the remote profile with the AS2 id.
func (s *Store) RemoteByAS2ID(ctx context.Context, id AS2ID) (Remote, error) {
	var out Remote
	err := s.sql.Read(ctx, func(tx module.Tx) (err error) {
		out, err = getRemote(ctx, tx, `as2_id = ?`, string(id))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Remote{}, fmt.Errorf("no AS2 remote profile has AS2 id %q: %w", id, persistence.ErrNotFound)
	}
	if err != nil {
		return Remote{}, fmt.Errorf("find AS2 remote profile by AS2 id %q: %w", id, err)
	}
	return out, nil
}

// ListRemotes lists remote profiles by partner, with the total count.
func (s *Store) ListRemotes(ctx context.Context, opt persistence.ListOptions) ([]Remote, int, error) {
	limit, offset := listPage(opt)
	out := []Remote{}
	var total int
	err := s.sql.Read(ctx, func(tx module.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM as2_remote_profiles`).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+remoteCols+` FROM as2_remote_profiles ORDER BY partner LIMIT ? OFFSET ?`, limit, offset)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRemote(tx, rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list AS2 remote profiles: %w", err)
	}
	return out, total, nil
}

// UpdateRemote replaces a partner's remote profile (r.Partner names it).
func (s *Store) UpdateRemote(ctx context.Context, r Remote) (Remote, error) {
	r = r.normalized()
	if err := s.prepareRemote(ctx, r); err != nil {
		return Remote{}, fmt.Errorf("update AS2 remote profile: %w", err)
	}
	c, err := r.columns()
	if err != nil {
		return Remote{}, fmt.Errorf("update AS2 remote profile: %w", err)
	}
	var old Remote
	err = s.sql.Read(ctx, func(tx module.Tx) (err error) {
		if old, err = getRemote(ctx, tx, `partner = ?`, r.Partner); err != nil {
			return err
		}
		return checkRemoteConflicts(ctx, tx, r, false)
	})
	if errors.Is(err, sql.ErrNoRows) {
		err = notFoundParty(persistence.PartyPartner, r.Partner, "remote")
	}
	if err != nil {
		return Remote{}, fmt.Errorf("update AS2 remote profile: %w", err)
	}
	// Until the row names the new certificates, the old ones stay protected as well.
	both := certIDs(append(old.certRefs(), r.certRefs()...))
	if err := s.setUses(ctx, UseRemoteProfile, r.Partner, both); err != nil {
		return Remote{}, fmt.Errorf("update AS2 remote profile: %w", err)
	}
	var out Remote
	err = s.sql.Write(ctx, func(tx module.Tx) error {
		if err := checkRemoteConflicts(ctx, tx, r, false); err != nil {
			return err
		}
		before, err := getRemote(ctx, tx, `partner = ?`, r.Partner)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundParty(persistence.PartyPartner, r.Partner, "remote")
		}
		if err != nil {
			return err
		}
		out, err = scanRemote(tx, tx.QueryRow(ctx, `UPDATE as2_remote_profiles SET as2_id = ?, endpoint_url = ?,
			partner_certificate_ids = ?, our_signing_certificate_id = ?, our_decryption_certificate_id = ?,
			compress = ?, signing_algorithm = ?, encryption_algorithm = ?, key_transport = ?, mdn_mode = ?,
			signed_mdn = ?, mdn_mic_algorithm = ?, async_mdn_url = ?, require_signed = ?, require_encrypted = ?,
			allow_sha1 = ?, mic_preference = ?, async_mdn_hosts = ?, duplicate_filename = ?,
			duplicate_filename_window_hours = ?, connect_timeout_seconds = ?, request_timeout_seconds = ?,
			receipt_timeout_minutes = ?, retry = ?, tls_trust_certificate_ids = ?, max_message_size_mib = ?,
			compression_order = ?, algorithm_protection = ?, tls_trust = ?, tls_pinned_sha256 = ?,
			gcm_confirmed = ?, duplicate_content = ?, duplicate_content_window_hours = ?, correlation_header = ?,
			chunked = ?, updated_at = ? WHERE partner = ? RETURNING `+remoteCols,
			r.AS2ID, r.EndpointURL, c.partnerIDs, nullID(r.OurSigningCertificateID),
			nullID(r.OurDecryptionCertificateID), r.Compress, r.SigningAlgorithm, r.EncryptionAlgorithm,
			r.KeyTransport, r.MDNMode, r.SignedMDN, r.MDNMICAlgorithm, r.AsyncMDNURL, r.RequireSigned,
			r.RequireEncrypted, r.AllowSHA1, r.MICPreference, c.hosts, r.DuplicateFilename,
			r.DuplicateFilenameWindowH, r.ConnectTimeoutSeconds, r.RequestTimeoutSeconds,
			r.ReceiptTimeoutMinutes, c.retry, c.trustIDs, r.MaxMessageSizeMiB, r.CompressionOrder, r.AlgorithmProtection, r.TLSTrust, r.TLSPinnedSHA256,
			r.GCMConfirmed, r.DuplicateContent, r.DuplicateContentWindowH, r.CorrelationHeader, r.Chunked, tx.Time(tx.Now()), r.Partner))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return notFoundParty(persistence.PartyPartner, r.Partner, "remote")
		case tx.IsUniqueViolation(err):
			return fmt.Errorf("AS2 id %q was taken meanwhile: %w", r.AS2ID, persistence.ErrConflict)
		case err != nil:
			return err
		}
		return tx.Audit(ctx, "update", AuditKindRemote, string(out.Partner), string(out.Partner), before, out)
	})
	if err = s.afterWrite(ctx, UseRemoteProfile, r.Partner, err); err != nil {
		return Remote{}, fmt.Errorf("update AS2 remote profile: %w", err)
	}
	s.changed()
	return out, nil
}

// DeleteRemote removes a partner's remote profile and releases its certificates.
func (s *Store) DeleteRemote(ctx context.Context, partner persistence.PartyName) error {
	err := s.sql.Write(ctx, func(tx module.Tx) error {
		before, err := getRemote(ctx, tx, `partner = ?`, partner)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundParty(persistence.PartyPartner, partner, "remote")
		}
		if err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `DELETE FROM as2_remote_profiles WHERE partner = ?`, partner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, notFoundParty(persistence.PartyPartner, partner, "remote"))
		}
		return tx.Audit(ctx, "delete", AuditKindRemote, string(partner), string(partner), before, nil)
	})
	if err != nil {
		return fmt.Errorf("delete AS2 remote profile: %w", err)
	}
	s.changed()
	if err := s.syncUses(ctx, UseRemoteProfile, partner); err != nil {
		return fmt.Errorf("AS2 remote profile of %q deleted, but its certificates are still marked as used: %w", partner, err)
	}
	return nil
}
