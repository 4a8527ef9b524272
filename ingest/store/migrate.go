package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

//go:embed migrations/*.sql
var migrations embed.FS

//go:embed sql/schema_migrations.sql
var schemaMigrationsDDL string

// Migration is one numbered schema change: one SQL statement, or several
// separated by a ";" at the end of a line, run in order. A migration is
// recorded once all its statements ran, so an interrupted one runs again
// from its first statement: each must be safe to repeat (IF NOT EXISTS, or
// a TRUNCATE before a copy).
type Migration struct {
	Version int
	Name    string // file name, e.g. "0001_samples.sql"
	SQL     string
}

// Statements splits the migration into its statements.
func (m Migration) Statements() []string {
	var out []string
	for _, st := range strings.Split(m.SQL, ";\n") {
		if st = strings.TrimSpace(st); st != "" {
			out = append(out, st)
		}
	}
	return out
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) { return readMigrations(migrations, "migrations") }

// readMigrations returns the migrations in dir of fsys in version order.
func readMigrations(fsys embed.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, dir+"/*.sql")
	if err != nil {
		return nil, fmt.Errorf("listing migrations: %w", err)
	}
	var ms []Migration
	seen := map[int]string{}
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and _", base)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, base, v)
		}
		seen[v] = base
		b, err := fsys.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", base, err)
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: strings.TrimRight(strings.TrimSpace(string(b)), ";")})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Migrate applies the migrations the database has not recorded yet, in
// order, and records each one in schema_migrations. It returns the names
// of the migrations it applied; running it again applies none.
func Migrate(ctx context.Context, conn driver.Conn) ([]string, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	return apply(ctx, conn, schemaMigrationsDDL, ms)
}

// apply creates schema_migrations with ddl, then applies and records the
// migrations of ms it does not hold yet.
func apply(ctx context.Context, conn driver.Conn, ddl string, ms []Migration) ([]string, error) {
	if err := conn.Exec(ctx, ddl); err != nil {
		return nil, fmt.Errorf("creating schema_migrations: %w", err)
	}
	done := map[int]bool{}
	rows, err := conn.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("reading schema_migrations: %w", err)
	}
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading schema_migrations: %w", err)
		}
		done[int(v)] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading schema_migrations: %w", err)
	}
	var applied []string
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		for i, st := range m.Statements() {
			if err := conn.Exec(ctx, st); err != nil {
				return applied, fmt.Errorf("applying migration %s (statement %d): %w", m.Name, i+1, err)
			}
		}
		if err := record(ctx, conn, m); err != nil {
			return applied, fmt.Errorf("recording migration %s: %w", m.Name, err)
		}
		applied = append(applied, m.Name)
	}
	return applied, nil
}

// record notes an applied migration. It goes through a batch: on 18.16 an
// INSERT with inline VALUES over the native protocol waits for data blocks.
func record(ctx context.Context, conn driver.Conn, m Migration) error {
	b, err := conn.PrepareBatch(ctx, "INSERT INTO schema_migrations (version, name, applied_at)")
	if err != nil {
		return err
	}
	if err := b.Append(uint32(m.Version), m.Name, time.Now().UTC()); err != nil {
		b.Abort()
		return err
	}
	return b.Send()
}
