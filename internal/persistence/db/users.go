package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
)

const (
	maxPasswordHash  = 512
	maxSealedTOTP    = 1024
	maxRecoveryCodes = 64
	maxRecoveryHash  = 512
	maxOIDCIssuer    = 1024
	maxOIDCSubject   = 255
)

// userCols and scanUser read a whole user. recovery_hashes is a JSON array of strings;
// the OIDC identity is NULL when the user has none.
const userCols = `id, name, display_name, role, password_hash, totp_secret, last_totp_step, recovery_hashes,
	disabled, generation, setup_token_hash, setup_expires_at, oidc_issuer, oidc_subject, created_at, updated_at,
	last_sign_in_at`

func scanUser(r rowScanner) (persistence.User, error) {
	var u persistence.User
	var recovery string
	var issuer, subject sql.NullString
	err := r.Scan(&u.ID, &u.Name, &u.DisplayName, &u.Role, &u.PasswordHash, &u.SealedTOTP, &u.LastTOTPStep,
		&recovery, &u.Disabled, &u.Generation, &u.SetupTokenHash, nullTimeCol{&u.SetupExpiresAt}, &issuer, &subject,
		timeCol{&u.CreatedAt}, timeCol{&u.UpdatedAt}, nullTimeCol{&u.LastSignInAt})
	if err != nil {
		return u, fmt.Errorf("read user: %w", err)
	}
	if u.RecoveryHashes, err = decodeHashes(recovery); err != nil {
		return u, fmt.Errorf("read user %d: %w", u.ID, err)
	}
	if len(u.SealedTOTP) == 0 {
		u.SealedTOTP = nil
	}
	u.OIDCIssuer, u.OIDCSubject = issuer.String, subject.String
	return u, nil
}

func decodeHashes(s string) ([]string, error) {
	var h []string
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return nil, fmt.Errorf("invalid stored recovery codes: %w", err)
	}
	if len(h) == 0 {
		return nil, nil
	}
	return h, nil
}

// encodeHashes writes recovery code hashes in one canonical form, so a conditional
// update can compare the column with the text it read.
func encodeHashes(h []string) string {
	if len(h) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(h)
	return string(b)
}

// activeUsers is the condition for users who can sign in at the time given as its one
// argument: persistence.User.CanSignIn in SQL.
const activeUsers = `NOT disabled AND ((password_hash <> '' AND length(totp_secret) > 0)
	OR (setup_token_hash <> '' AND setup_expires_at > ?) OR oidc_issuer IS NOT NULL)`

func checkPasswordHash(hash string, optional bool) error {
	if hash == "" && optional {
		return nil
	}
	if !strings.HasPrefix(hash, "$argon2id$") {
		return fieldMsg("password_hash", "must be an argon2id PHC string")
	}
	return checkText("password_hash", hash, maxPasswordHash)
}

func checkSealedTOTP(sealed []byte, optional bool) error {
	switch {
	case len(sealed) == 0 && !optional:
		return fieldMsg("totp_secret", "is empty")
	case len(sealed) > maxSealedTOTP:
		return fieldMsg("totp_secret", "longer than %d bytes", maxSealedTOTP)
	}
	return nil
}

func checkRecoveryHashes(hashes []string) error {
	if len(hashes) > maxRecoveryCodes {
		return fieldMsg("recovery_hashes", "more than %d codes", maxRecoveryCodes)
	}
	for _, h := range hashes {
		if h == "" {
			return fieldMsg("recovery_hashes", "holds an empty hash")
		}
		if err := checkText("recovery_hashes", h, maxRecoveryHash); err != nil {
			return err
		}
	}
	return nil
}

func checkUser(u *persistence.User) error {
	if err := check("name", u.Name, persistence.ParseUserName); err != nil {
		return err
	}
	if err := check("role", u.Role, persistence.ParseUserRole); err != nil {
		return err
	}
	if u.DisplayName == "" {
		u.DisplayName = string(u.Name)
	}
	if err := checkText("display_name", u.DisplayName, maxDisplayName); err != nil {
		return err
	}
	if err := checkPasswordHash(u.PasswordHash, true); err != nil {
		return err
	}
	if err := checkSealedTOTP(u.SealedTOTP, true); err != nil {
		return err
	}
	if err := checkRecoveryHashes(u.RecoveryHashes); err != nil {
		return err
	}
	if u.SetupTokenHash != "" {
		if err := checkSHA256("setup_token_hash", u.SetupTokenHash, false); err != nil {
			return err
		}
		if u.SetupExpiresAt == nil || u.SetupExpiresAt.IsZero() {
			return fieldMsg("setup_expires_at", "is missing")
		}
	} else if u.SetupExpiresAt != nil {
		return fieldMsg("setup_expires_at", "is set without a set-up token")
	}
	if (u.OIDCIssuer == "") != (u.OIDCSubject == "") {
		return fieldMsg("oidc_subject", "OIDC issuer and subject are set together")
	}
	if err := checkText("oidc_issuer", u.OIDCIssuer, maxOIDCIssuer); err != nil {
		return err
	}
	return checkText("oidc_subject", u.OIDCSubject, maxOIDCSubject)
}

// nullText is the argument for a nullable text column: NULL for "".
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// userErr names the operation and the user in err; a missing row is ErrNotFound.
func userErr(op string, id int64, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = persistence.ErrNotFound
	}
	return fmt.Errorf("%s user %d: %w", op, id, err)
}

// CreateUser inserts a user with generation 1 and no accepted TOTP step.
func (s *Store) CreateUser(ctx context.Context, u persistence.User) (persistence.User, error) {
	if err := checkUser(&u); err != nil {
		return persistence.User{}, fmt.Errorf("create user: %w", err)
	}
	if u.SealedTOTP == nil {
		u.SealedTOTP = []byte{}
	}
	var out persistence.User
	err := s.write(ctx, func(t *txn) error {
		var id int64
		err := t.queryRow(ctx, `SELECT id FROM users WHERE name = ?`, u.Name).Scan(&id)
		switch {
		case err == nil:
			return fmt.Errorf("user %q already exists: %w", u.Name, persistence.ErrConflict)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("create user %q: %w", u.Name, err)
		}
		now := t.s.tv(t.now)
		out, err = scanUser(t.queryRow(ctx, `INSERT INTO users (name, display_name, role, password_hash,
			totp_secret, last_totp_step, recovery_hashes, disabled, generation, setup_token_hash, setup_expires_at,
			oidc_issuer, oidc_subject, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, 0, ?, ?, 1, ?, ?, ?, ?, ?, ?) RETURNING `+userCols,
			u.Name, u.DisplayName, u.Role, u.PasswordHash, u.SealedTOTP, encodeHashes(u.RecoveryHashes), u.Disabled,
			u.SetupTokenHash, t.s.tvPtr(u.SetupExpiresAt), nullText(u.OIDCIssuer), nullText(u.OIDCSubject), now, now))
		if isUniqueViolation(err) {
			return fmt.Errorf("user %q: its name, OIDC identity or set-up token is taken: %w", u.Name, persistence.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("create user %q: %w", u.Name, err)
		}
		return t.auditUser(ctx, "create", nil, &out, userSecrets(out)...)(out)
	})
	return out, err
}

// GetUser returns one user with its credentials.
func (s *Store) GetUser(ctx context.Context, id int64) (persistence.User, error) {
	var out persistence.User
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanUser(t.queryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = ?`, id))
		return userErr("get", id, err)
	})
	return out, err
}

// GetUserByName returns one user with its credentials.
func (s *Store) GetUserByName(ctx context.Context, name persistence.UserName) (persistence.User, error) {
	var out persistence.User
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanUser(t.queryRow(ctx, `SELECT `+userCols+` FROM users WHERE name = ?`, string(name)))
		return notFound(err, "user %q", name)
	})
	return out, err
}

// GetUserByOIDC returns the user linked to the OIDC identity (issuer, subject).
func (s *Store) GetUserByOIDC(ctx context.Context, issuer, subject string) (persistence.User, error) {
	var out persistence.User
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanUser(t.queryRow(ctx, `SELECT `+userCols+` FROM users WHERE oidc_issuer = ? AND oidc_subject = ?`, issuer, subject))
		return notFound(err, "user of OIDC identity %q at %q", subject, issuer)
	})
	return out, err
}

// ListUsers lists users by name, with the total count.
func (s *Store) ListUsers(ctx context.Context, opt persistence.ListOptions) ([]persistence.User, int, error) {
	limit, offset := page(opt)
	var out []persistence.User
	var total int
	err := s.read(ctx, func(t *txn) error {
		if err := t.queryRow(ctx, `SELECT COUNT(*) FROM users`).Scan(&total); err != nil {
			return fmt.Errorf("count users: %w", err)
		}
		rows, err := t.query(ctx, `SELECT `+userCols+` FROM users ORDER BY name LIMIT ? OFFSET ?`, limit, offset)
		out, err = collect(rows, err, scanUser)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list users: %w", err)
	}
	return out, total, nil
}

// CountActiveUsers counts the users who can sign in now: not disabled, and either set
// up (a password and a TOTP secret) or holding an unexpired set-up link.
func (s *Store) CountActiveUsers(ctx context.Context) (int, error) {
	var n int
	err := s.read(ctx, func(t *txn) error {
		return t.queryRow(ctx, `SELECT COUNT(*) FROM users WHERE `+activeUsers, t.s.tv(t.now)).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("count active users: %w", err)
	}
	return n, nil
}

// SetUserSetupToken gives a user a set-up link, replacing any earlier one. The user's
// credentials and sessions stay as they are until the set-up completes.
func (s *Store) SetUserSetupToken(ctx context.Context, id int64, tokenHash string, expires time.Time) error {
	if err := checkSHA256("setup_token_hash", tokenHash, false); err != nil {
		return fmt.Errorf("set set-up link of user %d: %w", id, err)
	}
	if expires.IsZero() {
		return fmt.Errorf("set set-up link of user %d: %w", id, fieldMsg("setup_expires_at", "is missing"))
	}
	return s.write(ctx, func(t *txn) error {
		u, err := scanUser(t.queryRow(ctx, `UPDATE users SET setup_token_hash = ?, setup_expires_at = ?, updated_at = ?
			WHERE id = ? RETURNING `+userCols, tokenHash, t.s.tv(expires), t.s.tv(t.now), id))
		if isUniqueViolation(err) {
			return fmt.Errorf("set set-up link of user %d: the token is taken: %w", id, persistence.ErrConflict)
		}
		if err != nil {
			return userErr("set set-up link of", id, err)
		}
		return t.auditUser(ctx, "issue_setup_link", nil, nil, "setup_link")(u)
	})
}

// ConsumeUserSetupToken clears the unexpired set-up link with tokenHash of an enabled
// user and returns that user. Clearing is the condition of the update, so of two
// concurrent uses one finds the link and the other does not.
func (s *Store) ConsumeUserSetupToken(ctx context.Context, tokenHash string, now time.Time) (persistence.User, error) {
	if err := checkSHA256("setup_token_hash", tokenHash, false); err != nil {
		return persistence.User{}, fmt.Errorf("use set-up link: %w", err)
	}
	var out persistence.User
	err := s.write(ctx, func(t *txn) (err error) {
		out, err = scanUser(t.queryRow(ctx, `UPDATE users SET setup_token_hash = '', setup_expires_at = NULL,
			updated_at = ? WHERE setup_token_hash = ? AND setup_expires_at > ? AND NOT disabled RETURNING `+userCols,
			t.s.tv(t.now), tokenHash, t.s.tv(now)))
		if err != nil {
			return notFound(err, "set-up link")
		}
		return t.auditUser(ctx, "use_setup_link", nil, nil, "setup_link")(out)
	})
	return out, err
}

// CompleteUserSetup stores a user's password, TOTP secret and recovery codes together,
// clears any set-up link and ends the user's sessions. The last accepted TOTP step is
// kept: steps are times, so a step accepted once stays spent whatever the secret.
func (s *Store) CompleteUserSetup(ctx context.Context, id int64, passwordHash string, sealedTOTP []byte, recoveryHashes []string) (persistence.User, error) {
	for _, err := range []error{checkPasswordHash(passwordHash, false), checkSealedTOTP(sealedTOTP, false),
		checkRecoveryHashes(recoveryHashes)} {
		if err != nil {
			return persistence.User{}, fmt.Errorf("complete set-up of user %d: %w", id, err)
		}
	}
	return s.updateUser(ctx, id, "complete set-up of", "complete_setup", []string{"password", "totp", "recovery_codes"}, `password_hash = ?, totp_secret = ?, recovery_hashes = ?,
		setup_token_hash = '', setup_expires_at = NULL, generation = generation + 1`,
		passwordHash, sealedTOTP, encodeHashes(recoveryHashes))
}

// FindUserBySetupToken finds the enabled user whose unexpired link has tokenHash; the link
// stays as it is.
func (s *Store) FindUserBySetupToken(ctx context.Context, tokenHash string, now time.Time) (persistence.User, error) {
	if err := checkSHA256("setup_token_hash", tokenHash, false); err != nil {
		return persistence.User{}, fmt.Errorf("find set-up link: %w", err)
	}
	var out persistence.User
	err := s.read(ctx, func(t *txn) (err error) {
		out, err = scanUser(t.queryRow(ctx, `SELECT `+userCols+` FROM users
			WHERE setup_token_hash = ? AND setup_expires_at > ? AND NOT disabled`, tokenHash, t.s.tv(now)))
		return notFound(err, "set-up link")
	})
	return out, err
}

// CompleteUserSetupWithToken completes the set-up of user id while its link tokenHash is
// unused and unexpired, in one statement.
func (s *Store) CompleteUserSetupWithToken(ctx context.Context, id int64, tokenHash string, now time.Time, passwordHash string, sealedTOTP []byte, recoveryHashes []string) (persistence.User, error) {
	for _, err := range []error{checkSHA256("setup_token_hash", tokenHash, false), checkPasswordHash(passwordHash, false),
		checkSealedTOTP(sealedTOTP, false), checkRecoveryHashes(recoveryHashes)} {
		if err != nil {
			return persistence.User{}, fmt.Errorf("complete set-up of user %d: %w", id, err)
		}
	}
	var out persistence.User
	err := s.write(ctx, func(t *txn) (err error) {
		out, err = scanUser(t.queryRow(ctx, `UPDATE users SET password_hash = ?, totp_secret = ?, recovery_hashes = ?,
				setup_token_hash = '', setup_expires_at = NULL, generation = generation + 1, updated_at = ?
			WHERE id = ? AND setup_token_hash = ? AND setup_expires_at > ? AND NOT disabled
			RETURNING `+userCols,
			passwordHash, sealedTOTP, encodeHashes(recoveryHashes), t.s.tv(t.now), id, tokenHash, t.s.tv(now)))
		if err != nil {
			return notFound(err, "set-up link")
		}
		return t.auditUser(ctx, "complete_setup", nil, nil, "password", "totp", "recovery_codes")(out)
	})
	if err != nil {
		return persistence.User{}, fmt.Errorf("complete set-up of user %d: %w", id, err)
	}
	return out, nil
}

// SetUserPassword replaces a user's password hash and ends the user's sessions.
func (s *Store) SetUserPassword(ctx context.Context, id int64, hash string) (persistence.User, error) {
	if err := checkPasswordHash(hash, false); err != nil {
		return persistence.User{}, fmt.Errorf("set password of user %d: %w", id, err)
	}
	return s.updateUser(ctx, id, "set password of", "change_password", []string{"password"}, `password_hash = ?, generation = generation + 1`, hash)
}

// SetUserTOTP replaces a user's sealed TOTP secret and ends the user's sessions.
func (s *Store) SetUserTOTP(ctx context.Context, id int64, sealed []byte) (persistence.User, error) {
	if err := checkSealedTOTP(sealed, false); err != nil {
		return persistence.User{}, fmt.Errorf("set TOTP secret of user %d: %w", id, err)
	}
	return s.updateUser(ctx, id, "set TOTP secret of", "replace_authenticator", []string{"totp"}, `totp_secret = ?, generation = generation + 1`, sealed)
}

// SetUserRecoveryCodes replaces a user's recovery code hashes; sessions go on.
func (s *Store) SetUserRecoveryCodes(ctx context.Context, id int64, hashes []string) (persistence.User, error) {
	if err := checkRecoveryHashes(hashes); err != nil {
		return persistence.User{}, fmt.Errorf("set recovery codes of user %d: %w", id, err)
	}
	return s.updateUser(ctx, id, "set recovery codes of", "renew_recovery_codes", []string{"recovery_codes"}, `recovery_hashes = ?`, encodeHashes(hashes))
}

// updateUser sets credential columns (set, with args) and updated_at of one user and
// returns it; the audit event (action) names the secrets changed, without values.
func (s *Store) updateUser(ctx context.Context, id int64, op, action string, secrets []string, set string, args ...any) (persistence.User, error) {
	var out persistence.User
	err := s.write(ctx, func(t *txn) (err error) {
		out, err = scanUser(t.queryRow(ctx, `UPDATE users SET `+set+`, updated_at = ? WHERE id = ? RETURNING `+userCols,
			append(args, t.s.tv(t.now), id)...))
		if err != nil {
			return userErr(op, id, err)
		}
		return t.auditUser(ctx, action, nil, nil, secrets...)(out)
	})
	return out, err
}

// userView is what the audit log records of a user; credentials only as changed.
type userView struct {
	Name           persistence.UserName `json:"name"`
	DisplayName    string               `json:"display_name"`
	Role           persistence.UserRole `json:"role"`
	Disabled       bool                 `json:"disabled"`
	OIDCIssuer     string               `json:"oidc_issuer,omitempty"`
	OIDCSubject    string               `json:"oidc_subject,omitempty"`
	SetupExpiresAt *time.Time           `json:"setup_expires_at,omitempty"`
}

func viewUser(u *persistence.User) any {
	if u == nil {
		return nil
	}
	return userView{u.Name, u.DisplayName, u.Role, u.Disabled, u.OIDCIssuer, u.OIDCSubject, u.SetupExpiresAt}
}

// userSecrets names the credentials a new user was given.
func userSecrets(u persistence.User) []string {
	var out []string
	if u.PasswordHash != "" {
		out = append(out, "password")
	}
	if len(u.SealedTOTP) > 0 {
		out = append(out, "totp")
	}
	if len(u.RecoveryHashes) > 0 {
		out = append(out, "recovery_codes")
	}
	if u.SetupTokenHash != "" {
		out = append(out, "setup_link")
	}
	return out
}

// auditUser returns a function recording action on the user it is given: the fields
// that differ between before and after (both nil: none), then secrets as changed.
func (t *txn) auditUser(ctx context.Context, action string, before, after *persistence.User, secrets ...string) func(persistence.User) error {
	return func(u persistence.User) error {
		changes, err := audit.Diff(viewUser(before), viewUser(after))
		if err != nil {
			return fmt.Errorf("audit %s user %q: %w", action, u.Name, err)
		}
		for _, s := range secrets {
			changes = append(changes, audit.SecretChange(s))
		}
		return t.audit(ctx, action, "user", strconv.FormatInt(u.ID, 10), string(u.Name), changes)
	}
}

// AcceptTOTPStep moves the user's last accepted TOTP step up to step. The update is
// conditional on the stored step being lower, so of concurrent sign-ins with one code
// exactly one gets it; the others, and any later use, are ErrConflict.
func (s *Store) AcceptTOTPStep(ctx context.Context, id int64, step int64) error {
	return s.write(ctx, func(t *txn) error {
		_, err := scanID(t.queryRow(ctx, `UPDATE users SET last_totp_step = ? WHERE id = ? AND last_totp_step < ?
			RETURNING id`, step, id, step))
		if errors.Is(err, sql.ErrNoRows) {
			if err := t.userExists(ctx, id, "accept TOTP step of"); err != nil {
				return err
			}
			return fmt.Errorf("accept TOTP step %d of user %d: a step as late was accepted before: %w",
				step, id, persistence.ErrConflict)
		}
		return userErr("accept TOTP step of", id, err)
	})
}

// UseRecoveryCode removes the recovery code at index, provided its hash is still
// expectedHash. The update is conditional on the whole list read, so a code is used
// once even when two sign-ins present it together.
func (s *Store) UseRecoveryCode(ctx context.Context, id int64, index int, expectedHash string) error {
	return s.write(ctx, func(t *txn) error {
		var raw string
		err := t.queryRow(ctx, `SELECT recovery_hashes FROM users WHERE id = ?`+t.s.lockRows, id).Scan(&raw)
		if err != nil {
			return userErr("use recovery code of", id, err)
		}
		hashes, err := decodeHashes(raw)
		if err != nil {
			return userErr("use recovery code of", id, err)
		}
		if index < 0 || index >= len(hashes) || hashes[index] != expectedHash {
			return fmt.Errorf("recovery code %d of user %d is used or unknown: %w", index, id, persistence.ErrConflict)
		}
		rest := slices.Delete(slices.Clone(hashes), index, index+1)
		_, err = scanID(t.queryRow(ctx, `UPDATE users SET recovery_hashes = ? WHERE id = ? AND recovery_hashes = ?
			RETURNING id`, encodeHashes(rest), id, raw))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("recovery code %d of user %d was used meanwhile: %w", index, id, persistence.ErrConflict)
		}
		return userErr("use recovery code of", id, err)
	})
}

// SetUserDisabled disables a user, ending the user's sessions, or enables one. Setting
// the state the user already has changes nothing. Disabling the last user who can sign
// in, or the last administrator who can, is ErrLastUser.
func (s *Store) SetUserDisabled(ctx context.Context, id int64, disabled bool) error {
	return s.write(ctx, func(t *txn) error {
		op, set := "enable", `disabled = ?`
		if disabled {
			op, set = "disable", `disabled = ?, generation = generation + 1`
			if err := t.guardLastUser(ctx, id, op, true); err != nil {
				return err
			}
		}
		u, err := scanUser(t.queryRow(ctx, `UPDATE users SET `+set+`, updated_at = ? WHERE id = ? AND disabled <> ?
			RETURNING `+userCols, disabled, t.s.tv(t.now), id, disabled))
		if errors.Is(err, sql.ErrNoRows) {
			return t.userExists(ctx, id, op)
		}
		if err != nil {
			return userErr(op, id, err)
		}
		if disabled {
			if err := t.endUISessions(ctx, id); err != nil {
				return err
			}
		}
		return t.audit(ctx, op, "user", strconv.FormatInt(u.ID, 10), string(u.Name), []audit.Change{{Path: "disabled",
			Old: json.RawMessage(strconv.FormatBool(!disabled)), New: json.RawMessage(strconv.FormatBool(disabled))}})
	})
}

// SetUserRole changes a user's role. Demoting the last administrator who can sign in is
// ErrLastUser. Sessions go on: they read the role from the user on each request.
func (s *Store) SetUserRole(ctx context.Context, id int64, role persistence.UserRole) (persistence.User, error) {
	if err := check("role", role, persistence.ParseUserRole); err != nil {
		return persistence.User{}, fmt.Errorf("set role of user %d: %w", id, err)
	}
	var out persistence.User
	err := s.write(ctx, func(t *txn) (err error) {
		if role != persistence.RoleAdmin {
			if err := t.guardLastUser(ctx, id, "demote", false); err != nil {
				return err
			}
		}
		before, err := scanUser(t.queryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = ?`+t.s.lockRows, id))
		if err != nil {
			return userErr("set role of", id, err)
		}
		out, err = scanUser(t.queryRow(ctx, `UPDATE users SET role = ?, updated_at = ? WHERE id = ? RETURNING `+userCols,
			role, t.s.tv(t.now), id))
		if err != nil {
			return userErr("set role of", id, err)
		}
		return t.auditUser(ctx, "update", &before, &out)(out)
	})
	return out, err
}

// BumpUserGeneration ends every session of the user.
func (s *Store) BumpUserGeneration(ctx context.Context, id int64) error {
	return s.write(ctx, func(t *txn) error {
		u, err := scanUser(t.queryRow(ctx, `UPDATE users SET generation = generation + 1 WHERE id = ? RETURNING `+userCols, id))
		if err != nil {
			return userErr("end sessions of", id, err)
		}
		if err := t.endUISessions(ctx, id); err != nil {
			return err
		}
		return t.auditUser(ctx, "sign_out_everywhere", nil, nil)(u)
	})
}

// DeleteUser deletes a user. Deleting the last user who can sign in, or the last
// administrator who can, is ErrLastUser.
func (s *Store) DeleteUser(ctx context.Context, id int64) error {
	return s.write(ctx, func(t *txn) error {
		if err := t.guardLastUser(ctx, id, "delete", true); err != nil {
			return err
		}
		u, err := scanUser(t.queryRow(ctx, `DELETE FROM users WHERE id = ? RETURNING `+userCols, id))
		if err != nil {
			return userErr("delete", id, err)
		}
		return t.auditUser(ctx, "delete", &u, nil)(u)
	})
}

// TouchUserSignIn records the time of a user's successful sign-in.
func (s *Store) TouchUserSignIn(ctx context.Context, id int64, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("record sign-in of user %d: %w", id, fieldMsg("last_sign_in_at", "is missing"))
	}
	return s.write(ctx, func(t *txn) error {
		_, err := scanID(t.queryRow(ctx, `UPDATE users SET last_sign_in_at = ? WHERE id = ? RETURNING id`, t.s.tv(at), id))
		return userErr("record sign-in of", id, err)
	})
}

// userExists is nil when the user exists, ErrNotFound naming op when not.
func (t *txn) userExists(ctx context.Context, id int64, op string) error {
	_, err := scanID(t.queryRow(ctx, `SELECT id FROM users WHERE id = ?`, id))
	return userErr(op, id, err)
}

// guardLastUser refuses with ErrLastUser a change (op) that takes from user id the
// ability to sign in (when losesSignIn) or the administrator role, when no other user
// who can sign in keeps it. A user who cannot sign in is not guarded. It locks the users
// who can sign in, so concurrent guarded changes on PostgreSQL queue and the later one
// sees the earlier one's result (SQLite has one writer anyway).
func (t *txn) guardLastUser(ctx context.Context, id int64, op string, losesSignIn bool) error {
	rows, err := t.query(ctx, `SELECT id, name, role FROM users WHERE `+activeUsers+` ORDER BY id`+t.s.lockRows,
		t.s.tv(t.now))
	type active struct {
		id   int64
		name persistence.UserName
		role persistence.UserRole
	}
	users, err := collect(rows, err, func(r rowScanner) (active, error) {
		var a active
		err := r.Scan(&a.id, &a.name, &a.role)
		return a, err
	})
	if err != nil {
		return fmt.Errorf("%s user %d: read users who can sign in: %w", op, id, err)
	}
	var self *active
	others, otherAdmins := 0, 0
	for i, u := range users {
		switch {
		case u.id == id:
			self = &users[i]
		case u.role == persistence.RoleAdmin:
			others++
			otherAdmins++
		default:
			others++
		}
	}
	switch {
	case self == nil:
		return nil
	case losesSignIn && others == 0:
		return fmt.Errorf("cannot %s user %q: no other user can sign in: %w", op, self.name, persistence.ErrLastUser)
	case self.role == persistence.RoleAdmin && otherAdmins == 0:
		return fmt.Errorf("cannot %s user %q: no other administrator can sign in: %w", op, self.name, persistence.ErrLastUser)
	}
	return nil
}
