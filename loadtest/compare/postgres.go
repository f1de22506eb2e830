package compare

import "strconv"

// A Postgres row runs oncepay's own build (no comparison strategy) on the
// local runtime's ha topology, Postgres under Patroni, under a kill of an
// api replica and then the fault it is about: the Postgres leader's
// replication stream held for the kind's delay (2 s) under load, then the
// leader's host killed (fault kind failover-postgres-lagged). Its two rows differ in one variable, the
// replication: synchronous (Patroni's synchronous_mode: a commit is
// acknowledged only once the synchronous standby has it, and only that
// standby may be promoted) or asynchronous (commits are acknowledged at
// once, and a replica within maximum_lag_on_failover may be promoted).
// Both let a replica up to 1 GiB behind promote itself, as a team that
// prefers availability sets it, so that the replication is the only
// difference.

// The Postgres rows' names, as -strategies takes them.
const (
	PatroniSync  = "patroni-sync"
	PatroniAsync = "patroni-async"
)

// PostgresKinds are the fault kinds of a Postgres row's plan (the fault
// matrix's plan restricted to them, MATRIX_KINDS): a kill of an api
// replica, then the lagged failover. The failover itself lasts longer than
// its kind's settle (the old leader rejoins, the cluster becomes whole), so
// invariant 8 cannot measure its recovery before the load ends; the kill's
// recovery it can, and a run in which it measured none would fail.
var PostgresKinds = []string{"kill-api", "failover-postgres-lagged"}

// maxLagOnFailover is both rows' maximum_lag_on_failover, in bytes.
const maxLagOnFailover = 1 << 30

// Postgres is one Postgres row.
type Postgres struct {
	Name        string
	Synchronous bool
}

// PostgresRow returns the Postgres row named name, and whether there is
// one.
func PostgresRow(name string) (Postgres, bool) {
	switch name {
	case PatroniSync:
		return Postgres{Name: name, Synchronous: true}, true
	case PatroniAsync:
		return Postgres{Name: name, Synchronous: false}, true
	}
	return Postgres{}, false
}

// Env returns what scripts/local and loadtest/run need to run the row:
// the ha topology and Patroni's replication settings. Patroni keeps the
// settings a cluster was bootstrapped with, so a row needs a cluster
// bootstrapped with them (cmd/compare purges the state before each row).
func (p Postgres) Env() []string {
	return []string{
		"TOPOLOGY=ha",
		"PATRONI_SYNCHRONOUS_MODE=" + map[bool]string{true: "true", false: "false"}[p.Synchronous],
		"PATRONI_MAXIMUM_LAG_ON_FAILOVER=" + strconv.Itoa(maxLagOnFailover),
	}
}

// Label is the row's cell in the table's postgres column.
func (p Postgres) Label() string {
	if p.Synchronous {
		return "Patroni, synchronous"
	}
	return "Patroni, asynchronous"
}
