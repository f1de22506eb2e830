// Package migrations holds the payments schema as versioned SQL files and
// applies them. The api's `migrate` subcommand runs Apply; the worker and the
// tests use the same files.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed *.sql
var files embed.FS

// lockID is the pg_advisory_lock key that serialises concurrent migrators.
const lockID = 0x6f6e636570617901 // "oncepay" + 1

// Apply runs, in version order, every migration not yet recorded in
// schema_migrations, each in its own transaction. It holds a session-level
// advisory lock while doing so, so that several replicas starting at once
// apply each migration exactly once. It returns the versions it applied.
func Apply(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: acquire connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(lockID)); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(lockID))

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("migrate: schema_migrations: %w", err)
	}
	rows, _ := conn.Query(ctx, "SELECT version FROM schema_migrations")
	done, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("migrate: read applied versions: %w", err)
	}
	applied := make(map[int]bool, len(done))
	for _, v := range done {
		applied[v] = true
	}

	list, err := All()
	if err != nil {
		return nil, err
	}
	var ran []int
	for _, m := range list {
		if applied[m.Version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name)
			return err
		})
		if err != nil {
			return ran, fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
		ran = append(ran, m.Version)
	}
	return ran, nil
}

// Migration is one embedded SQL file, NNNN_name.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// All returns the embedded migrations in version order.
func All() ([]Migration, error) {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, name := range names {
		v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migrate: %s: name must start with a version number", name)
		}
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	return out, nil
}
