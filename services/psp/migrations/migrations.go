// Package migrations holds the psp's versioned SQL schema and applies it.
//
// Files are named NNNN_description.sql and applied in order, each in its own
// transaction, and recorded in schema_migrations. Apply holds a Postgres
// advisory lock for its whole run, so concurrent starts are safe.
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed *.sql
var files embed.FS

// lockID is the pg_advisory_lock key shared by every psp instance ("psp-migr").
const lockID int64 = 0x7073702d6d696772

// Migration is one schema change.
type Migration struct {
	Version string // "0001"
	Name    string // "0001_ledger.sql"
	SQL     string
}

// All returns the embedded migrations in the order they are applied.
func All() ([]Migration, error) {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	slices.Sort(names)
	all := make([]Migration, 0, len(names))
	for _, name := range names {
		version, _, ok := strings.Cut(path.Base(name), "_")
		if !ok || version == "" {
			return nil, fmt.Errorf("migration %q: name must be NNNN_description.sql", name)
		}
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", name, err)
		}
		all = append(all, Migration{Version: version, Name: name, SQL: string(b)})
	}
	return all, nil
}

// Apply applies every embedded migration not yet recorded in
// schema_migrations and returns the names of those it applied. It waits for
// any concurrent Apply on the same database to finish first.
func Apply(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) ([]string, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: acquire connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockID); err != nil {
		return nil, fmt.Errorf("migrate: take advisory lock: %w", err)
	}
	defer func() {
		// Unlock even if ctx is done; a dead connection drops the lock anyway.
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lockID); err != nil {
			log.Warn("migrate: release advisory lock", "err", err)
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    text        PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	var applied []string
	for _, m := range all {
		done, err := apply(ctx, conn.Conn(), m)
		if err != nil {
			return applied, err
		}
		if done {
			log.Info("migration applied", "name", m.Name)
			applied = append(applied, m.Name)
		}
	}
	return applied, nil
}

// apply runs m in one transaction unless it is already recorded; it reports
// whether it ran m.
func apply(ctx context.Context, conn *pgx.Conn, m Migration) (bool, error) {
	ran := false
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)", m.Version).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
			return err
		}
		ran = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("migration %s: %w", m.Name, err)
	}
	return ran, nil
}
