// Package pgpool opens a service's Postgres pool with server-side timeouts,
// so that no statement, lock wait or idle transaction holds a connection,
// and the work waiting on it, without bound.
package pgpool

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncepay/oncepay/pkg/service/envconf"
)

// Timeouts are the session settings every connection of a pool gets. A zero
// field leaves that setting to the server (whose default is off).
type Timeouts struct {
	Statement         time.Duration // statement_timeout
	Lock              time.Duration // lock_timeout
	IdleInTransaction time.Duration // idle_in_transaction_session_timeout
}

// Defaults are the timeouts a service uses when its environment sets none:
// statement 10s, lock 2s, idle in transaction 30s.
func Defaults() Timeouts {
	return Timeouts{Statement: 10 * time.Second, Lock: 2 * time.Second, IdleInTransaction: 30 * time.Second}
}

// Read reads prefix+"PG_STATEMENT_TIMEOUT", prefix+"PG_LOCK_TIMEOUT" and
// prefix+"PG_IDLE_IN_TRANSACTION_TIMEOUT" through p (e.g. prefix "" or
// "PSP_"); unset ones take Defaults, 0 turns one off. A negative value, or
// one that is not a whole number of milliseconds, is recorded as a problem
// in p.
func Read(p *envconf.Parser, prefix string) Timeouts {
	d := Defaults()
	return Timeouts{
		Statement:         read(p, prefix+"PG_STATEMENT_TIMEOUT", d.Statement),
		Lock:              read(p, prefix+"PG_LOCK_TIMEOUT", d.Lock),
		IdleInTransaction: read(p, prefix+"PG_IDLE_IN_TRANSACTION_TIMEOUT", d.IdleInTransaction),
	}
}

func read(p *envconf.Parser, name string, def time.Duration) time.Duration {
	v := p.Duration(name, def)
	if (v < 0 || v%time.Millisecond != 0) && !p.Failed(name) {
		p.Fail(name, "must be 0 (off) or a positive whole number of milliseconds")
	}
	return v
}

// Config parses url (pgxpool.ParseConfig) and sets t as runtime parameters
// of every connection, over any the URL sets. It does not echo url in its
// error: URLs carry passwords.
func Config(url string, t Timeouts) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres url: not a valid Postgres URL")
	}
	for name, d := range map[string]time.Duration{
		"statement_timeout":                   t.Statement,
		"lock_timeout":                        t.Lock,
		"idle_in_transaction_session_timeout": t.IdleInTransaction,
	} {
		if d > 0 {
			cfg.ConnConfig.RuntimeParams[name] = strconv.FormatInt(max(d.Milliseconds(), 1), 10) // ms
		}
	}
	return cfg, nil
}

// New returns a pool on url whose connections have timeouts t, after each
// of configure (e.g. trace.Tracing.Postgres) has changed its
// configuration. Like pgxpool.New, it does not connect yet.
func New(ctx context.Context, url string, t Timeouts, configure ...func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	cfg, err := Config(url, t)
	if err != nil {
		return nil, err
	}
	for _, f := range configure {
		f(cfg)
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}
