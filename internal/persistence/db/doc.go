// Package db is the SQL implementation of persistence.Store, for SQLite (standalone) and
// PostgreSQL (standalone or distributed), with one code path for both.
//
// # Connections
//
// SQLite (modernc.org/sqlite, no cgo) runs in WAL mode with synchronous=FULL, foreign
// keys on and a busy timeout. Writes go through one connection, with BEGIN IMMEDIATE, so
// they queue in the process instead of meeting SQLITE_BUSY; reads go through a separate
// read-only pool and see the last commit without waiting for the writer. PostgreSQL is
// reached through pgx's database/sql driver; writes run at READ COMMITTED and reads at
// REPEATABLE READ, so a count and its page agree.
//
// # Statements
//
// bun.DB holds both pools, with the dialect of each database. Statements are explicit SQL
// with named columns and RETURNING, written once with ? placeholders that are rebound to
// $n on PostgreSQL and passed as native parameters. bun's client-side formatting was
// measured against this (BenchmarkPlaceholders, a 64-row insert and point selects): on
// SQLite native parameters were 10-20% faster, on PostgreSQL the two were within the
// noise. Native parameters decide it by keeping every domain type's Value method in the
// path, so a value the domain refuses is an error naming it, where bun's formatter would
// render the error into the SQL text.
// Lists of ids travel as one parameter (an array on PostgreSQL, a JSON array read by
// json_each on SQLite) so a statement's text does not depend on the list's length;
// multi-row inserts use chunks of 64, 32, … rows for the same reason. On SQLite each
// statement is compiled once per transaction and reused for the batch.
//
// # Schema
//
// schema/<dialect>/NNNN_name.sql are embedded and applied in order at Open, in one
// transaction (under an advisory lock on PostgreSQL, so processes starting together do
// not race). The schema_version table records them; a database with a version this
// binary does not know is refused. There are no data migrations: until the first release
// the files are edited in place and databases reset.
//
// Times are UTC with microsecond precision: timestamptz on PostgreSQL, fixed-width text
// (2006-01-02T15:04:05.000000Z) on SQLite, whose text order is time order.
//
// # State, history and status
//
// Every method is one transaction. Every delivery transition is a conditional UPDATE
// (on the state read, and on the claim token where a claim is involved) that also sets
// previous_state = state, so RETURNING names both ends of the transition for its history
// line. The transaction then recomputes, once per touched message, the stage with
// persistence.DeriveStage and the status with persistence.DeriveStatus from all of the
// message's deliveries, appending a status_changed line when the status moved; no other
// code writes either. On PostgreSQL the messages are locked (FOR NO KEY UPDATE, in id
// order) before their deliveries are read, so concurrent transitions of one message's
// deliveries derive in turn, never from a stale view. A transaction that still meets a
// deadlock or serialization failure is run again (it is written to be rerunnable).
//
// Creating deliveries is recorded by the dispatched or redispatch_requested line that
// names their targets, not by one delivery_changed line each. A wake-up is not a state
// change and writes no history. Reasons and last errors pass through
// persistence.SanitizeReason.
//
// # Claims and the sweep
//
// A claim is one statement: the oldest claimable deliveries of a target (the claimable
// fragment: due, and not behind an unfinished earlier delivery of the same session key)
// are picked with FOR UPDATE SKIP LOCKED on PostgreSQL and set delivering under a lease.
// Each claim token is a fresh random prefix per claim call followed by the delivery's id.
// Completions and releases are applied in as few statements as their outcomes allow,
// each conditional on (id, token) and state delivering; a mismatch is ErrLostClaim for
// that item only. The sweep's three scans (expired leases, due wake-ups, overdue
// receipts) read partial indexes in order, take the longest overdue first, and skip rows
// a worker holds.
//
// New, redispatched, redelivered and lease-expired deliveries are due at once and get
// their next sweep wake-up WakeupGrace later, since whoever made them due publishes the
// first wake-up after the commit; a released delivery is woken by the next sweep.
package db
