package httpapi

import (
	"net/http"

	"github.com/oncepay/oncepay/pkg/service/pgpool"
)

// retryAfterDatabase is the Retry-After of the 503 that answers a request
// while Postgres cannot be reached.
const retryAfterDatabase = "1"

// dbUnavailable reports whether err says that Postgres could not be reached
// or did not answer in time (pgpool.Unavailable): connection refused or
// reset, shutting down or starting up, a statement or pool timeout. Such a
// request is answered 503 + Retry-After (databaseUnavailable), so under the
// boundary its key is released, not stored: a retry with the same key runs
// again, and the unique key on payments answers it if the first attempt's
// commit did land.
func dbUnavailable(err error) bool { return pgpool.Unavailable(err) }

// databaseUnavailable is the problem that answers a request that failed
// because Postgres could not be reached; writeError counts it in
// postgres_unavailable_total.
func databaseUnavailable() *problem {
	p := newProblem(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
		"the database is unreachable or did not answer in time; retry later with the same Idempotency-Key").
		with("Retry-After", retryAfterDatabase)
	p.database = true
	return p
}
