package module

import (
	"context"
	"crypto"
	"crypto/x509"
	"database/sql"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"wharf/internal/alert"
	"wharf/internal/persistence"
	"wharf/internal/product"
	"wharf/internal/storage"
	"wharf/internal/telemetry"
)

// SQL gives a module transactions on the gateway's database for its own tables (see
// Module.Schema). Queries use ? placeholders on both databases; times are passed through
// Tx.Time and read back with ScanTime, so they compare the same on SQLite and PostgreSQL;
// a time column is TEXT on SQLite and TIMESTAMPTZ on PostgreSQL.
type SQL interface {
	// Dialect is "sqlite" or "postgres".
	Dialect() string
	// Read runs fn in a read-only transaction that sees one snapshot.
	Read(ctx context.Context, fn func(tx Tx) error) error
	// Write runs fn in a write transaction (on SQLite on the single writer connection).
	// fn may run more than once after a PostgreSQL serialization failure and must have no
	// effect outside the transaction.
	Write(ctx context.Context, fn func(tx Tx) error) error
}

// Tx is one transaction of SQL.
type Tx interface {
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
	Query(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Now is the transaction's clock reading, in UTC.
	Now() time.Time
	// Time converts a time into the argument its database stores.
	Time(t time.Time) any
	// ScanTime is a sql.Scanner for a time column (NULL leaves the zero time).
	ScanTime(dst *time.Time) sql.Scanner
	// IsUniqueViolation reports whether err is a unique constraint's refusal.
	IsUniqueViolation(err error) bool
	// Audit records a change of a module's configuration record in this transaction:
	// the fields that differ between before and after (nil for a created or deleted
	// record, both encoding as JSON objects); fields named in secret are recorded as
	// changed without values. The actor comes from ctx.
	Audit(ctx context.Context, action, kind, recordID, recordName string, before, after any, secret ...string) error
}

// Blobs stores and opens payload blobs of messages.
type Blobs interface {
	Put(ctx context.Context, messageID int64, stage persistence.PayloadStage, r io.Reader, opts ...storage.PutOption) (storage.Blob, error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
	// KeyOf is the key a Put of the message's stage stores under.
	KeyOf(messageID int64, stage persistence.PayloadStage) (string, error)
}

// Certificates opens stored certificates where they are used; private keys are unsealed
// only by these calls.
type Certificates interface {
	Signer(ctx context.Context, id int64) (*x509.Certificate, crypto.Signer, error)
	Decrypter(ctx context.Context, id int64) (*x509.Certificate, crypto.Decrypter, error)
}

// Core is what the core hands a module's Setup: everything its plugins and REST routes
// share.
type Core struct {
	Logger  *slog.Logger
	DataDir string
	// BaseURL is the gateway's public URL (no trailing slash).
	BaseURL string
	Store   persistence.Store
	DB      SQL
	Blobs   Blobs
	Certs   Certificates
	Sealer  Sealer
	Ingest  Ingester
	// Alerts takes the alerts a module raises; it never blocks.
	Alerts alert.Raiser
	// Bus is the internal bus, for what a module tells its parts in other processes.
	Bus Bus
	// Product returns the product string Wharf sends now (see package product); nil
	// means the version is shown.
	Product func() string
	// Inbound counts the requests a module's listeners take from outside, for the
	// process's metrics; nil counts nothing.
	Inbound InboundMetrics
	// Telemetry traces a module's listeners and outgoing requests; nil traces nothing.
	Telemetry *telemetry.Telemetry
}

// ProductName is the product string for a User-Agent, Server or Reporting-UA field.
func (c Core) ProductName() string { return productName(c.Product) }

func productName(f func() string) string {
	if f == nil {
		return product.String(false)
	}
	return f()
}

// InboundMetrics counts requests from outside (a partner's AS2 requests) by protocol,
// plugin instance and a reason code from the module's own short list, never by party,
// address or id.
type InboundMetrics interface {
	// Began counts a request in progress; done ends it.
	Began(protocol string, instance persistence.InstanceName) (done func())
	// Refused counts a request refused for reason.
	Refused(protocol string, instance persistence.InstanceName, reason string)
}

// Bus carries messages between processes (internal/bus in production). Subscribers of a
// subject are called one message at a time.
type Bus interface {
	Publish(subject string, data []byte) error
	Subscribe(subject string, fn func(subject string, data []byte)) (unsubscribe func(), err error)
}

// BodyKind is what a module's REST route reads as its request body.
type BodyKind int

const (
	BodyNone      BodyKind = iota // no body is read
	BodyJSON                      // application/json, decoded strictly with DecodeJSON
	BodyMultipart                 // multipart/form-data with an X-Requested-With header
)

// APIRoute is one REST operation a module adds under /api/v1. The core authenticates
// the caller, checks the content type and writes the answer: Handle returns the status
// and the value to write as JSON (nil with 204), or an error the core maps to the wire
// like its own (FieldError → 400, ErrNotFound → 404, ErrConflict → 409, *APIError as is).
type APIRoute struct {
	Method string
	Path   string
	Body   BodyKind
	Handle func(r *http.Request) (status int, v any, err error)
}

// APIError is an answer with a specific status and code.
type APIError struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
}

func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// APIProvider is implemented by a module runtime (Setup's result) with REST routes.
type APIProvider interface {
	APIRoutes() []APIRoute
}

// MessagePanels is implemented by a module runtime that shows its part of a message
// (the "protocols" object of a message's detail).
type MessagePanels interface {
	// MessagePanel returns the module's panel for the message, or ok false when the
	// module had no part in it.
	MessagePanel(ctx context.Context, messageID int64) (panel any, ok bool, err error)
}

// Stopper is implemented by a module runtime with background work (queued jobs); the
// core stops it after the plugin instances.
type Stopper interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// SchemaFS is a module's tables: files sqlite/NNNN_name.sql and postgres/NNNN_name.sql,
// numbered from 1 without gaps, applied after the core's schema in one transaction per
// start and recorded per module.
type SchemaFS = fs.FS

// Row is the result of Tx.QueryRow.
type Row interface {
	Scan(dest ...any) error
}

// PartyReferences is implemented by a module runtime whose records name parties (an AS2
// profile names its partner): a party they name is not deleted.
type PartyReferences interface {
	// PartyReferences describes the module's records that name the party ("AS2 remote
	// profile acme"), none when it is free.
	PartyReferences(ctx context.Context, kind persistence.PartyKind, name persistence.PartyName) ([]string, error)
}
