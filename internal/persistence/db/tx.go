package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"wharf/internal/persistence"
)

// txn is one transaction of a Store method. Changes of delivery state are recorded with
// changed; finish then recomputes the status of every message they touched and appends
// the history lines, so no method can change a state without its history and status.
type txn struct {
	s     *Store
	db    *bun.DB // the pool the transaction runs on
	tx    *sql.Tx
	now   time.Time
	actor string // for status_changed lines; "system" unless an operator acted

	hist    []historyRow
	touched map[int64]bool
	// inserted are touched messages this transaction inserted (see touchNew).
	inserted map[int64]insertedMessage
	// announced lists the messages whose history this transaction wrote, for the history
	// hook after the commit.
	announced []int64
	// lastChange is the last delivery that failed or stalled per message in this
	// transaction; alerts lists the messages OnMessageAlert reports after the commit.
	lastChange map[int64]MessageAlert
	alerts     []MessageAlert
	// sessions collects what delivery changes mean for ordered sessions (sessions.go).
	sessions sessionWork
	stmts    map[string]*sql.Stmt // SQLite only: see prepared
	// unprepared lists statements this transaction compiled that the pool lacks.
	unprepared []string
	// changes are the transitions OnChanges reports after the commit.
	changes Changes
	// pauses are the partners this transaction paused or resumed, for OnPartnerPause.
	pauses []PauseEvent
	// locked are the messages an earlier statement of the transaction locked for settle
	// (PostgreSQL; see lockingMessages).
	locked map[int64]bool
	// presettled are locked messages with their delivery states as a lockingMessages
	// statement returned them, which settle need not read again.
	presettled map[int64]presettled
	// statusUpdates are settle's status updates not yet run: finish runs them, on
	// PostgreSQL with the history insert (settle_pg.go).
	statusUpdates []statusUpdate
	// pluginChanged says the transaction wrote a plugin instance's record, for
	// OnPluginChange.
	pluginChanged bool

	// refs are the correlation and origin event ids of messages this transaction has
	// read or inserted, for the history lines it writes (correlation.go).
	refs map[int64]messageRefs
}

// maxTxAttempts bounds how often a PostgreSQL transaction is run again after a deadlock
// or serialization failure; conditional updates make a rerun safe.
const maxTxAttempts = 4

// write runs fn in a write transaction: on SQLite on the single writer connection with
// BEGIN IMMEDIATE, on PostgreSQL at READ COMMITTED with row locks where the method needs
// them. fn may run more than once and must not have effects outside the transaction.
func (s *Store) write(ctx context.Context, fn func(t *txn) error) error {
	if s.dialect == DialectSQLite {
		return s.group.write(s, ctx, fn)
	}
	return s.writeOne(ctx, fn)
}

// writeOne runs fn in a transaction of its own.
func (s *Store) writeOne(ctx context.Context, fn func(t *txn) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = s.runTx(ctx, s.w, nil, fn)
		if err == nil || attempt == maxTxAttempts || !s.retryable(err) || ctx.Err() != nil {
			return err
		}
		s.log.Debug("transaction retried", "attempt", attempt, "err", err)
	}
}

// read runs fn in a read-only transaction whose queries see one snapshot (a count and
// its page agree): SQLite's transactions always do, PostgreSQL's from REPEATABLE READ.
func (s *Store) read(ctx context.Context, fn func(t *txn) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if s.dialect == DialectPostgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	return s.runTx(ctx, s.r, opts, fn)
}

func (s *Store) runTx(ctx context.Context, db *bun.DB, opts *sql.TxOptions, fn func(t *txn) error) (err error) {
	defer func() { err = markUnavailable(err) }()
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	s.counts.transactions.Add(1)
	// Statements go to the underlying *sql.Tx with native parameters: see the package
	// documentation for why bun's client-side formatting is not used.
	t := &txn{s: s, db: db, tx: tx.Tx, now: utc(s.now()), actor: systemActor}
	defer func() {
		if len(t.unprepared) > 0 {
			s.compileOnPool(context.WithoutCancel(ctx), db, t.unprepared)
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(t); err != nil {
		return err
	}
	if err = t.finish(ctx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	s.afterCommit(t)
	return nil
}

// afterCommit tells the hooks what a committed transaction did: its transitions, the
// messages whose history it wrote, and the alerts its status changes raise.
func (s *Store) afterCommit(t *txn) {
	s.reportChanges(t)
	if len(t.announced) > 0 {
		if fn := s.onHistory.Load(); fn != nil {
			(*fn)(t.announced)
		}
	}
	if fn := s.onAlert.Load(); fn != nil {
		for _, f := range t.alerts {
			(*fn)(f)
		}
	}
	if fn := s.onSessionAlert.Load(); fn != nil {
		for _, a := range t.sessions.alerts {
			(*fn)(a)
		}
	}
	if len(t.pauses) > 0 {
		s.pauseCache.forget()
	}
	if fn := s.onPartnerPause.Load(); fn != nil {
		for _, p := range t.pauses {
			(*fn)(p)
		}
	}
	s.reportPluginChange(t)
}

// stmtCtx is the context a statement runs under. On SQLite's writer a statement checks
// for cancellation before it starts and then runs to its end: the driver would watch a
// cancellable context with a goroutine of its own for every statement, and a write
// transaction's statements are short.
func (t *txn) stmtCtx(ctx context.Context) (context.Context, error) {
	if t.s.dialect != DialectSQLite || t.db != t.s.w || ctx.Done() == nil {
		return ctx, nil
	}
	if err := ctx.Err(); err != nil {
		return ctx, err
	}
	return context.WithoutCancel(ctx), nil
}

func (t *txn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	t.s.counts.statements.Add(1)
	ctx, err := t.stmtCtx(ctx)
	if err != nil {
		return nil, err
	}
	if st, err := t.prepared(ctx, q); st != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, t.s.rebind(q), args...)
}

func (t *txn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	t.s.counts.statements.Add(1)
	ctx, err := t.stmtCtx(ctx)
	if err != nil {
		return nil, err
	}
	if st, err := t.prepared(ctx, q); st != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, t.s.rebind(q), args...)
}

func (t *txn) queryRow(ctx context.Context, q string, args ...any) rowScanner {
	t.s.counts.statements.Add(1)
	ctx, err := t.stmtCtx(ctx)
	if err != nil {
		return errRow{err}
	}
	if st, err := t.prepared(ctx, q); st != nil || err != nil {
		if err != nil {
			return errRow{err}
		}
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, t.s.rebind(q), args...)
}

// prepared returns q prepared on SQLite, where compiling a short statement costs more
// than running it. A statement the store has compiled before is the pool's, bound to the
// transaction; a new one is compiled for this transaction and then, once the transaction
// has let go of its connection (SQLite's writer pool has only one), compiled on the pool
// for every later transaction. It returns nil on PostgreSQL, whose driver keeps prepared
// statements per connection. The transaction closes its bindings when it ends.
func (t *txn) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	if t.s.dialect != DialectSQLite {
		return nil, nil
	}
	if st, ok := t.stmts[q]; ok {
		return st, nil
	}
	var st *sql.Stmt
	if parent := t.s.poolStmt(t.db, q); parent != nil {
		st = t.tx.StmtContext(ctx, parent)
	} else {
		var err error
		if st, err = t.tx.PrepareContext(ctx, q); err != nil {
			return nil, err
		}
		t.unprepared = append(t.unprepared, q)
	}
	if t.stmts == nil {
		t.stmts = make(map[string]*sql.Stmt)
	}
	t.stmts[q] = st
	return st, nil
}

// maxPoolStmts bounds the compiled statements a pool keeps; batch inserts make one text
// per batch size.
const maxPoolStmts = 512

// poolStmt returns q compiled on the pool, or nil when it is not (yet).
func (s *Store) poolStmt(db *bun.DB, q string) *sql.Stmt {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	return s.stmts[db][q]
}

// compileOnPool compiles statements on the pool for later transactions. It runs after a
// transaction ended, when the pool has a free connection.
func (s *Store) compileOnPool(ctx context.Context, db *bun.DB, qs []string) {
	for _, q := range qs {
		s.stmtMu.Lock()
		_, have := s.stmts[db][q]
		full := len(s.stmts[db]) >= maxPoolStmts
		s.stmtMu.Unlock()
		if have || full {
			continue
		}
		st, err := db.DB.PrepareContext(ctx, q)
		if err != nil {
			continue // the transaction that used it compiled it fine; try again next time
		}
		s.stmtMu.Lock()
		if s.stmts == nil {
			s.stmts = map[*bun.DB]map[string]*sql.Stmt{}
		}
		if s.stmts[db] == nil {
			s.stmts[db] = map[string]*sql.Stmt{}
		}
		if _, have := s.stmts[db][q]; have {
			st.Close()
		} else {
			s.stmts[db][q] = st
		}
		s.stmtMu.Unlock()
	}
}

// errRow is a row whose query could not even be prepared.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// rebind turns ? placeholders into $1, $2, … for PostgreSQL. Question marks inside
// quoted literals or identifiers are left alone.
func (s *Store) rebind(q string) string {
	if s.dialect != DialectPostgres || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// idList returns a condition "col is one of ids" and its single argument. One statement
// text serves any number of ids, so PostgreSQL's statement cache is not churned by list
// lengths: an array parameter there, a JSON array expanded by json_each on SQLite.
func (s *Store) idList(col string, ids []int64) (string, any) {
	if s.dialect == DialectPostgres {
		return col + " = ANY(?)", ids
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(']')
	return col + " IN (SELECT value FROM json_each(?))", b.String()
}

// claimList returns a condition "(id, claim_token) is one of the pairs" and its
// arguments, in one statement text for any number of pairs, like idList.
func (s *Store) claimList(ids []int64, tokens []string) (string, []any) {
	if s.dialect == DialectPostgres {
		return `(id, claim_token) IN (SELECT * FROM unnest(CAST(? AS BIGINT[]), CAST(? AS TEXT[])))`, []any{ids, tokens}
	}
	pairs := make([][2]any, len(ids))
	for i := range ids {
		pairs[i] = [2]any{ids[i], tokens[i]}
	}
	b, _ := json.Marshal(pairs)
	return `(id, claim_token) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`, []any{string(b)}
}

// insertRows inserts rows with multi-row VALUES statements of at most 64 rows. On SQLite,
// which compiles each statement text, chunks have power-of-two sizes, so a table sees at
// most seven statement texts whatever the batch size; on PostgreSQL, where every
// statement is a round trip and the driver keeps prepared texts per connection, a batch
// up to 64 rows is one statement.
func (t *txn) insertRows(ctx context.Context, head string, ncols int, rows [][]any) error {
	for len(rows) > 0 {
		n := min(chunkMax, len(rows))
		if t.s.dialect == DialectSQLite {
			n = chunkMax
			for n > len(rows) {
				n /= 2
			}
		}
		var b strings.Builder
		b.WriteString(head)
		b.WriteString(" VALUES ")
		one := "(" + placeholders(ncols) + ")"
		args := make([]any, 0, n*ncols)
		for i, r := range rows[:n] {
			if len(r) != ncols {
				return fmt.Errorf("insert row has %d values, want %d", len(r), ncols)
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(one)
			args = append(args, r...)
		}
		if _, err := t.exec(ctx, b.String(), args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// chunkMax is the largest multi-row insert: it keeps statements well under both
// databases' parameter limits.
const chunkMax = 64

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// Errors of the database, told apart without caring which one it is.

func (s *Store) retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40P01" || pe.Code == "40001"
	}
	return false
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

func isForeignKeyViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23503"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	return false
}

// notFound maps sql.ErrNoRows to persistence.ErrNotFound, naming what was looked for.
func notFound(err error, format string, args ...any) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf(format+": %w", append(args, persistence.ErrNotFound)...)
	}
	return err
}

const systemActor = "system"

func actorOr(a string) string {
	a = persistence.SanitizeReason(a)
	if a == "" {
		return systemActor
	}
	return a
}
