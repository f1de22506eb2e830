package pgpool_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncepay/oncepay/internal/testenv"
	"github.com/oncepay/oncepay/pkg/service/pgpool"
)

// TestUnavailable classifies errors that the real Postgres and pgx return
// (each case makes its error happen) and server errors by SQLSTATE.
func TestUnavailable(t *testing.T) {
	url := testenv.PostgresURL(t)
	for _, tc := range []struct {
		name string
		err  func(t *testing.T) error
		want bool
	}{
		{"connection refused", func(t *testing.T) error {
			_, err := pgx.Connect(t.Context(), "postgres://u:p@"+closedAddr(t)+"/db?connect_timeout=2")
			return err
		}, true},
		{"pool acquire runs out of time", func(t *testing.T) error {
			pool, err := pgxpool.New(t.Context(), "postgres://u:p@"+silentAddr(t)+"/db")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			_, err = pool.Exec(ctx, "SELECT 1")
			return err
		}, true},
		{"backend terminated mid-query (57P01)", func(t *testing.T) error {
			return terminated(t, url, false)
		}, true},
		{"query on a terminated backend's connection", func(t *testing.T) error {
			return terminated(t, url, true)
		}, true},
		{"statement timeout (57014)", func(t *testing.T) error {
			conn := connect(t, url)
			_, err := conn.Exec(t.Context(), "SET statement_timeout = 50")
			if err != nil {
				t.Fatal(err)
			}
			_, err = conn.Exec(t.Context(), "SELECT pg_sleep(2)")
			return err
		}, true},
		{"closed connection", func(t *testing.T) error {
			conn := connect(t, url)
			_ = conn.Close(t.Context())
			_, err := conn.Exec(t.Context(), "SELECT 1")
			return err
		}, true},
		{"unique violation", func(t *testing.T) error {
			conn := connect(t, url)
			_, err := conn.Exec(t.Context(), "CREATE TEMP TABLE u (k int PRIMARY KEY); INSERT INTO u VALUES (1), (1)")
			return err
		}, false},
		{"syntax error", func(t *testing.T) error {
			_, err := connect(t, url).Exec(t.Context(), "SELEC 1")
			return err
		}, false},
		{"no rows", func(t *testing.T) error {
			var n int
			return connect(t, url).QueryRow(t.Context(), "SELECT 1 WHERE false").Scan(&n)
		}, false},
		{"caller cancelled", func(t *testing.T) error {
			conn := connect(t, url)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			_, err := conn.Exec(ctx, "SELECT 1")
			return err
		}, false},
		{"nil", func(*testing.T) error { return nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err(t)
			if got := pgpool.Unavailable(err); got != tc.want {
				t.Errorf("Unavailable(%v) = %v, want %v", err, got, tc.want)
			}
			if wrapped := fmt.Errorf("create payment: %w", err); err != nil && pgpool.Unavailable(wrapped) != tc.want {
				t.Errorf("Unavailable of the wrapped error differs")
			}
		})
	}
}

func TestUnavailableCodes(t *testing.T) {
	for code, want := range map[string]bool{
		"08006": true, // connection_failure
		"08001": true, // sqlclient_unable_to_establish_sqlconnection
		"57P01": true, // admin_shutdown
		"57P02": true, // crash_shutdown
		"57P03": true, // cannot_connect_now (starting up, in recovery)
		"57014": true, // query_canceled (statement_timeout)
		"53300": true, // too_many_connections
		"55P03": true, // lock_not_available (lock_timeout)
		"25006": true, // read_only_sql_transaction (a standby)
		"23505": false,
		"40001": false,
		"42P01": false,
		"":      false,
	} {
		if got := pgpool.Unavailable(&pgconn.PgError{Code: code}); got != want {
			t.Errorf("Unavailable(SQLSTATE %q) = %v, want %v", code, got, want)
		}
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// terminated runs a long query on a connection whose backend another
// session terminates (pg_terminate_backend: what a fast shutdown does to
// every backend) and returns the query's error, or, with after, the error
// of the next query on that connection.
func terminated(t *testing.T, url string, after bool) error {
	t.Helper()
	victim, admin := connect(t, url), connect(t, url)
	pid := victim.PgConn().PID()
	errc := make(chan error, 1)
	go func() {
		_, err := victim.Exec(context.Background(), "SELECT pg_sleep(10)")
		errc <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var ok bool
		if err := admin.QueryRow(t.Context(), `SELECT pg_terminate_backend($1)
			FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'SELECT pg_sleep%'`, pid).Scan(&ok); err == nil && ok {
			break
		} else if !errors.Is(err, pgx.ErrNoRows) && err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the long query never showed in pg_stat_activity")
		}
		time.Sleep(10 * time.Millisecond)
	}
	err := <-errc
	if after {
		_, err = victim.Exec(t.Context(), "SELECT 1")
	}
	return err
}

// closedAddr returns an address of 127.0.0.1 where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// silentAddr returns an address of 127.0.0.1 that accepts connections and
// never answers, like a server that hangs; closed at cleanup.
func silentAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}
