package db

import "sync/atomic"

// statementCounts counts the transactions the store begins and the statements its
// transactions run. On PostgreSQL each statement, begin and commit is a round trip to
// the server; the tests of round trips per message read the counts (export_test.go).
type statementCounts struct {
	transactions atomic.Int64
	statements   atomic.Int64
}
