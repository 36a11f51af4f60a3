package profile

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"wharf/internal/certs"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// Certificate use kinds of the core's certificate_uses rows; the name is the party.
const (
	UseLocalProfile  = "as2_local_profile"
	UseRemoteProfile = "as2_remote_profile"
)

// Codes of the conflicts the store refuses with; the REST API answers them as 409.
const (
	CodeProfileExists = "PROFILE_EXISTS"
	CodeAS2IDTaken    = "AS2_ID_TAKEN"
)

// ConflictError refuses a write that clashes with another profile. It is
// persistence.ErrConflict for callers that test for it, and a *module.APIError with Code
// for the REST API.
type ConflictError struct {
	Code    string
	Message string
	Details map[string]any
}

func (e *ConflictError) Error() string { return e.Message }

func (e *ConflictError) Unwrap() []error {
	return []error{persistence.ErrConflict, &module.APIError{Status: 409, Code: e.Code, Message: e.Message, Details: e.Details}}
}

// Store keeps the AS2 profiles in the module's tables. Certificates and parties belong to
// the core: the store checks them on every write and records the certificates a profile
// names as the core's certificate uses, so they cannot be deleted while named.
type Store struct {
	sql  module.SQL
	core persistence.Store

	mu       sync.Mutex
	onChange []func()
}

// The audit log's kinds of the profiles.
const (
	AuditKindLocal  = "as2_local_profile"
	AuditKindRemote = "as2_remote_profile"
)

// NewStore returns a store over the module's SQL, checking references against core.
func NewStore(sql module.SQL, core persistence.Store) *Store {
	return &Store{sql: sql, core: core}
}

// OnChange registers fn to run after every profile write through this store (caches of
// resolved profiles drop their entries).
func (s *Store) OnChange(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = append(s.onChange, fn)
}

func (s *Store) changed() {
	s.mu.Lock()
	fns := slices.Clone(s.onChange)
	s.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// certRef is one certificate a profile names, with the JSON field naming it.
type certRef struct {
	field string
	id    int64
	// key requires a private key; decrypt requires one that decrypts (RSA); partner
	// refuses one with our private key.
	key, decrypt, partner bool
}

func (l Local) certRefs() []certRef {
	var out []certRef
	if l.SigningCertificateID != 0 {
		out = append(out, certRef{field: "signing_certificate_id", id: l.SigningCertificateID, key: true})
	}
	if l.DecryptionCertificateID != 0 {
		out = append(out, certRef{field: "decryption_certificate_id", id: l.DecryptionCertificateID, key: true, decrypt: true})
	}
	if p := l.PreviousDecryptionCertificateID; p != nil {
		out = append(out, certRef{field: "previous_decryption_certificate_id", id: *p, key: true, decrypt: true})
	}
	if p := l.MDNSigningCertificateID; p != nil {
		out = append(out, certRef{field: "mdn_signing_certificate_id", id: *p, key: true})
	}
	return out
}

func (r Remote) certRefs() []certRef {
	var out []certRef
	for _, id := range r.PartnerCertificateIDs {
		out = append(out, certRef{field: "partner_certificate_ids", id: id, partner: true})
	}
	if p := r.OurSigningCertificateID; p != nil {
		out = append(out, certRef{field: "our_signing_certificate_id", id: *p, key: true})
	}
	if p := r.OurDecryptionCertificateID; p != nil {
		out = append(out, certRef{field: "our_decryption_certificate_id", id: *p, key: true, decrypt: true})
	}
	for _, id := range r.TLSTrustCertificateIDs {
		out = append(out, certRef{field: "tls_trust_certificate_ids", id: id})
	}
	return out
}

func certIDs(refs []certRef) []int64 {
	ids := make([]int64, 0, len(refs))
	for _, r := range refs {
		ids = append(ids, r.id)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// checkParty refuses a profile of a party that does not exist.
func (s *Store) checkParty(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) error {
	_, err := s.core.GetParty(ctx, kind, name)
	if errors.Is(err, persistence.ErrNotFound) {
		return fieldErr(string(kind), fmt.Sprintf("%s %q does not exist", kind, name))
	}
	if err != nil {
		return fmt.Errorf("check %s %q: %w", kind, name, err)
	}
	return nil
}

// checkCertificates refuses references to missing certificates and, where a key is used,
// to certificates without one. It returns the parsed certificates by id.
func (s *Store) checkCertificates(ctx context.Context, refs []certRef) (map[int64]*x509.Certificate, error) {
	parsed := map[int64]*x509.Certificate{}
	for _, ref := range refs {
		rec, err := s.core.GetCertificate(ctx, ref.id)
		if errors.Is(err, persistence.ErrNotFound) {
			return nil, fieldErr(ref.field, fmt.Sprintf("certificate %d does not exist", ref.id))
		}
		if err != nil {
			return nil, fmt.Errorf("check certificate %d: %w", ref.id, err)
		}
		if ref.partner && rec.HasPrivateKey {
			return nil, fieldErr(ref.field, certs.OwnAsPartner)
		}
		if ref.key && !rec.HasPrivateKey {
			return nil, fieldErr(ref.field, fmt.Sprintf("certificate %d has no private key", ref.id))
		}
		c, err := x509.ParseCertificate(rec.DER)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: stored certificate is damaged: %w", ref.id, err)
		}
		if _, isRSA := c.PublicKey.(*rsa.PublicKey); ref.decrypt && !isRSA {
			return nil, fieldErr(ref.field, fmt.Sprintf("certificate %d has a %s key; AS2 key transport decrypts with RSA keys only", ref.id, c.PublicKeyAlgorithm))
		}
		parsed[ref.id] = c
	}
	return parsed, nil
}

// setUses records the certificates a profile names. It runs before the profile row is
// written, so no certificate can be deleted between the check and the write.
func (s *Store) setUses(ctx context.Context, kind string, name persistence.PartyName, ids []int64) error {
	if err := s.core.SetCertificateUses(ctx, kind, string(name), ids); err != nil {
		return fmt.Errorf("record the certificates of %s %q: %w", kind, name, err)
	}
	return nil
}

// syncUses sets a profile's certificate uses to what its row names now (none when the row
// is gone): after a write, and to restore them after a failed one. It runs even when ctx
// is cancelled, since a half-done write must not leave uses behind.
func (s *Store) syncUses(ctx context.Context, kind string, name persistence.PartyName) error {
	ctx = context.WithoutCancel(ctx)
	var ids []int64
	err := s.sql.Read(ctx, func(tx module.Tx) error {
		var err error
		if kind == UseLocalProfile {
			var l Local
			l, err = getLocal(ctx, tx, `organization = ?`, name)
			ids = certIDs(l.certRefs())
		} else {
			var r Remote
			r, err = getRemote(ctx, tx, `partner = ?`, name)
			ids = certIDs(r.certRefs())
		}
		if errors.Is(err, sql.ErrNoRows) {
			ids, err = nil, nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("read the certificates of %s %q: %w", kind, name, err)
	}
	return s.setUses(ctx, kind, name, ids)
}

// afterWrite settles the certificate uses once the row write is done: on failure they go
// back to what the stored row names, and the write's error is what the caller sees.
func (s *Store) afterWrite(ctx context.Context, kind string, name persistence.PartyName, writeErr error) error {
	if err := s.syncUses(ctx, kind, name); err != nil {
		if writeErr != nil {
			return errors.Join(writeErr, err)
		}
		return fmt.Errorf("profile saved, but its certificate uses are stale: %w", err)
	}
	return writeErr
}

func marshalJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func unmarshalJSON(s string, dst any, what string) error {
	if err := json.Unmarshal([]byte(s), dst); err != nil {
		return fmt.Errorf("stored %s is damaged: %w", what, err)
	}
	return nil
}

func nullID(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func listPage(opt persistence.ListOptions) (limit, offset int) {
	limit, offset = opt.Limit, max(opt.Offset, 0)
	if limit <= 0 {
		limit = 100
	}
	return limit, offset
}

func notFoundParty(kind persistence.PartyKind, name persistence.PartyName, what string) error {
	return fmt.Errorf("%s %q has no AS2 %s profile: %w", kind, name, what, persistence.ErrNotFound)
}

func as2IDTaken(id AS2ID, what, owner string) error {
	return &ConflictError{
		Code:    CodeAS2IDTaken,
		Message: fmt.Sprintf("AS2 id %q is taken by the %s profile of %q", id, what, owner),
		Details: map[string]any{"as2_id": string(id), "used_by": owner},
	}
}
