package pgpool

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says that Postgres could not be reached
// or could not do the work now, a condition that ends on its own: a retry
// of the same work later may succeed. It is true for
//
//   - errors that pgx itself marks as such: a failed connect
//     (*pgconn.ConnectError), an error before anything was sent
//     (pgconn.SafeToRetry), a timeout inside pgconn (pgconn.Timeout);
//   - a context deadline, such as one that ran out while the pool waited
//     for a connection (pgxpool returns context.DeadlineExceeded as is);
//   - a connection broken mid-query (io.EOF, io.ErrUnexpectedEOF, a
//     net.Error: reset, refused, closed) or already closed
//     (pgconn.ErrConnClosed);
//   - the server's own errors of SQLSTATE class 08 (connection exception),
//     53 (insufficient resources: too many connections, disk full, out of
//     memory) and 57 (operator intervention: query_canceled by
//     statement_timeout, admin_shutdown, crash_shutdown,
//     cannot_connect_now while starting up or in recovery), 55P03
//     lock_not_available (lock_timeout) and 25006 read_only_sql_transaction
//     (connected to a standby).
//
// It is false for nil, for context.Canceled (the caller gave up; nothing
// says the database is down) and for every other error, such as a
// constraint violation or a syntax error, which a retry repeats.
//
// Work that failed with such an error may or may not have taken effect
// (a commit whose answer was lost); only work that is safe to repeat, or
// guarded by a unique key, may be retried blindly.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) { // pgconn.Timeout counts it too
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableCode(pgErr.Code)
	}
	var (
		connectErr *pgconn.ConnectError
		netErr     net.Error
	)
	switch {
	case errors.As(err, &connectErr), pgconn.SafeToRetry(err), pgconn.Timeout(err),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, pgconn.ErrConnClosed), errors.As(err, &netErr):
		return true
	}
	return false
}

// unavailableCode reports whether a server error's SQLSTATE is one that
// Unavailable lists. Hand-written because pgx has no classification of
// codes (github.com/jackc/pgerrcode has, and is a dependency for five
// lines).
func unavailableCode(code string) bool {
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "08", "53", "57":
		return true
	}
	return code == "55P03" || code == "25006"
}
