package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"wharf/internal/persistence"
)

// Ping checks that the database answers a query now, for the health monitor.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return markUnavailable(fmt.Errorf("ping database: %w", err))
	}
	return nil
}

// markUnavailable wraps err with persistence.ErrUnavailable when it says the database
// could not be reached, so every caller (the REST API above all) can tell an outage
// from a refused query without knowing the driver.
func markUnavailable(err error) error {
	if err == nil || errors.Is(err, persistence.ErrUnavailable) || !unreachable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", persistence.ErrUnavailable, err)
}

// unreachable tells the driver's errors of a connection that could not be made or was
// lost from those of a statement.
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08 is a connection exception; 57P01–57P03 are the server shutting down
		// or not accepting connections yet (a stop, pg_terminate_backend, recovery).
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The caller gave up (a context's error also passes for a net.Error).
		return false
	case errors.As(err, &ne):
		return true
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	}
	// pgx reports a connection it already closed after a failure in words only.
	return strings.Contains(err.Error(), "conn closed")
}
