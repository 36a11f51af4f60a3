package gateway

import (
	"errors"
	"fmt"
	"net"
	"os"

	"wharf/internal/config"
	"wharf/internal/persistence/db"
)

// Start-up failures are printed as one line by the command: what went wrong, then what
// the operator can do about it. The helpers here add the second half where the cause is
// known, so a panic or a bare driver message never has to stand for a misconfiguration.

// withFix appends the remedy to err.
func withFix(err error, fix string) error { return fmt.Errorf("%w; %s", err, fix) }

// prepareDataDir creates the data directory and proves it writable, so a directory that
// is a file or read-only fails here rather than at the first key or payload written.
func prepareDataDir(dir string) error {
	const fix = "set --data-dir (WHARF_DATA_DIR) to a directory this user can create and write"
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return withFix(fmt.Errorf("create data directory %s: %w", dir, err), fix)
	}
	f, err := os.CreateTemp(dir, ".wharf-write-check-*")
	if err != nil {
		return withFix(fmt.Errorf("data directory %s is not writable: %w", dir, err), fix)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return withFix(fmt.Errorf("data directory %s: remove %s: %w", dir, name, err), fix)
	}
	return nil
}

// listenHTTP binds the API and UI address before anything else is opened, so a taken or
// foreign address is reported before the database is touched.
func listenHTTP(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, withFix(fmt.Errorf("listen on %s: %w", addr, err),
			"choose a free address of this host with --http-addr (WHARF_HTTP_ADDR)")
	}
	return ln, nil
}

// Remedies for key files that cannot be read, by key.
const (
	fixSecretsKey = "restore the secrets key file this database was sealed with, or point WHARF_SECRETS_KEY_FILE at it"
	fixAuditKey   = "restore the audit key file the audit log was written with, or point WHARF_AUDIT_KEY_FILE at it"
	fixSessionKey = "replace the session key file (WHARF_SESSION_KEY_FILE) with a valid one, or delete it to have a new one generated (everyone is signed out)"
)

// dbFix names what to check when the database cannot be opened; a schema newer than the
// binary already says what to do.
func dbFix(err error, cfg config.Config) error {
	if errors.Is(err, db.ErrSchemaNewer) {
		return err
	}
	if cfg.IsPostgres() {
		return withFix(err, "check --db-url (WHARF_DB_URL): the host, port, user and database, and that PostgreSQL is running and reachable")
	}
	return withFix(err, fmt.Sprintf("check that %s is an SQLite database of Wharf this user can write, or move it aside to start with a new one", cfg.SQLitePath()))
}
