package db

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"wharf/internal/audit"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// Dialect names, as Store.Dialect reports them.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// WakeupGrace is how long after a delivery becomes due (dispatch, redispatch, redeliver,
// lease expiry) the sweep waits before it publishes another wake-up: the first one is
// published by whoever made the delivery due, right after the commit.
const WakeupGrace = 15 * time.Second

// Options configure Open.
type Options struct {
	// URL selects PostgreSQL ("postgres://…" or "postgresql://…"); empty means SQLite.
	URL string
	// SQLitePath is the SQLite database file, created when missing. Required without URL.
	SQLitePath string
	// Logger receives schema and maintenance messages; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock for methods that take no time argument; nil means time.Now.
	Now func() time.Time
	// Modules are the modules' own tables, applied after the core's schema.
	Modules []ModuleSchema
	// AuditKey keys the audit log's hash chain (audit.KeySize bytes); required.
	AuditKey []byte
	// Holder names this process across its restarts (ValidHolder); every claim it takes
	// carries it, so its next run can release them at once (ReleasePreviousClaims).
	// Empty: claims name no holder and only their leases' expiry frees them.
	Holder string
}

// OnMessageAlert sets fn to be called after each commit for every message whose status
// that commit turned to error, stalled, not_routed or refused (the statuses that need
// someone), or turned from one of them to another status (the need is gone, so its alert
// resolves): once per message and event, from the one code that derives statuses. fn runs in the
// committing goroutine and must not block (the alert queue's Raise); nil removes it.
func (s *Store) OnMessageAlert(fn func(MessageAlert)) {
	if fn == nil {
		s.onAlert.Store(nil)
		return
	}
	s.onAlert.Store(&fn)
}

// alertStatuses are the statuses OnMessageAlert reports a message entering.
var alertStatuses = []persistence.MessageStatus{persistence.StatusError, persistence.StatusStalled, persistence.StatusNotRouted, persistence.StatusRefused}

// MessageAlert is a message whose status became or left one of alertStatuses, with the
// delivery that made it one when the commit changed one (its target and sanitized
// reason), or the reason its source refused it.
type MessageAlert struct {
	Message persistence.Message
	Target  persistence.InstanceName
	Reason  string
	// Previous is the status before the commit.
	Previous persistence.MessageStatus
}

// Store implements persistence.Store on SQLite or PostgreSQL.
type Store struct {
	dialect string
	w       *bun.DB // writes; on SQLite its pool holds exactly one connection
	r       *bun.DB // reads; the same pool as w on PostgreSQL
	log     *slog.Logger
	now     func() time.Time

	onAlert        atomic.Pointer[func(MessageAlert)]
	onSessionAlert atomic.Pointer[func(SessionAlert)] // see OnSessionAlert
	onPartnerPause atomic.Pointer[func(PauseEvent)]   // see OnPartnerPause
	onPluginChange atomic.Pointer[func()]             // see OnPluginChange

	pauseCache pauseCache // that no partner is paused, for claims (pause_cache.go)
	counts     statementCounts

	// Dialect fragments, fixed at Open.
	lockRows   string // appended to a SELECT that locks the rows it returns
	lockStatus string // appended to a SELECT of messages whose status is to be recomputed
	skipLocked string // appended to a SELECT that picks rows other workers have not locked

	auditKey []byte
	holder   string // Options.Holder

	stmtMu sync.Mutex
	stmts  map[*bun.DB]map[string]*sql.Stmt // SQLite: compiled statements per pool

	onHistory atomic.Pointer[func([]int64)]          // see OnHistory
	erasers   atomic.Pointer[[]module.MessageEraser] // see SetMessageErasers
	onChanges atomic.Pointer[func(Changes)]          // see OnChanges
	group     groupCommit                            // SQLite: write transactions that arrive together commit together
}

var _ persistence.Store = (*Store)(nil)

// Open connects to the database, applies the embedded schema versions it lacks and
// refuses a database whose schema is newer than this binary.
func Open(ctx context.Context, opt Options) (*Store, error) {
	if len(opt.AuditKey) != audit.KeySize {
		return nil, fmt.Errorf("open database: the audit key is %d bytes, want %d", len(opt.AuditKey), audit.KeySize)
	}
	if err := ValidHolder(opt.Holder); err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	s := &Store{log: opt.Logger, now: opt.Now, auditKey: bytes.Clone(opt.AuditKey), holder: opt.Holder}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	var err error
	switch {
	case opt.URL != "":
		err = s.openPostgres(opt.URL)
	case opt.SQLitePath != "":
		err = s.openSQLite(opt.SQLitePath)
	default:
		err = errors.New("neither a PostgreSQL URL nor an SQLite path was given")
	}
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := s.migrateModules(ctx, opt.Modules); err != nil {
		s.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := s.EnsureHistoryPartitions(ctx, s.now(), HistoryMonthsAhead); err != nil {
		s.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	return s, nil
}

// PostgresPoolSize is the most connections a process holds to PostgreSQL.
const PostgresPoolSize = 32

func (s *Store) openPostgres(dsn string) error {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return errors.New("database URL must start with postgres:// or postgresql://")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("parse PostgreSQL URL: %w", redactURLError(err))
	}
	sqldb := stdlib.OpenDB(*cfg)
	// As many connections stay idle as may be open: with fewer, every burst of concurrent
	// work (a worker's attempts, an API's requests) closes the surplus on release and
	// opens new ones on the next burst, a backend started by PostgreSQL each time. The
	// idle time trims them once the bursts stop.
	sqldb.SetMaxOpenConns(PostgresPoolSize)
	sqldb.SetMaxIdleConns(PostgresPoolSize)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	s.dialect = DialectPostgres
	s.w = bun.NewDB(sqldb, pgdialect.New())
	s.r = s.w
	s.lockRows = " FOR UPDATE"
	// Weaker than FOR UPDATE, so it does not wait for the key-share locks that inserting
	// a delivery, payload or history row takes on its message, yet two recomputations of
	// one message still queue behind each other.
	s.lockStatus = " FOR NO KEY UPDATE"
	s.skipLocked = " FOR UPDATE SKIP LOCKED"
	return nil
}

func (s *Store) openSQLite(path string) error {
	common := url.Values{}
	common.Set("_busy_timeout", "10000")
	common.Set("_foreign_keys", "1")
	common.Set("_journal_mode", "WAL")
	// A positive MDN is a legal promise: an acknowledged message must survive power loss.
	common.Set("_synchronous", "FULL")
	// Temporary tables and the journals of savepoints stay in memory. On disk, a group
	// commit's savepoint journal outgrows its in-memory start and spills to a file
	// created and deleted per transaction.
	common.Set("_pragma", "temp_store(memory)")

	// A file: URI, so the path is percent-decoded by SQLite and may hold ? or #.
	name := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	wq := cloneValues(common)
	wq.Set("_txlock", "immediate")
	// Erasure: freed and overwritten content is zeroed in the file, not left in free
	// pages where a copy of the database file would still hold it.
	wq.Add("_pragma", "secure_delete(on)")
	writer, err := sql.Open("sqlite", name+"?"+wq.Encode())
	if err != nil {
		return err
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)

	rq := cloneValues(common)
	rq.Set("_query_only", "1")
	reader, err := sql.Open("sqlite", name+"?"+rq.Encode())
	if err != nil {
		writer.Close()
		return err
	}
	n := max(4, runtime.GOMAXPROCS(0))
	reader.SetMaxOpenConns(n)
	reader.SetMaxIdleConns(n)

	s.dialect = DialectSQLite
	s.w = bun.NewDB(writer, sqlitedialect.New())
	s.r = bun.NewDB(reader, sqlitedialect.New())
	return nil
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// redactURLError keeps a parse error from echoing a password back into logs.
func redactURLError(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("the connection string is malformed")
	}
	return err
}

// Dialect reports "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.dialect }

// Close closes the connection pools.
func (s *Store) Close() error {
	var errs []error
	s.stmtMu.Lock()
	for _, m := range s.stmts {
		for _, st := range m {
			errs = append(errs, st.Close())
		}
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if s.r != nil && s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	return errors.Join(errs...)
}
