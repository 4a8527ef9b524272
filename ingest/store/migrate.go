package store

import (
	"context"
	_ "embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

//go:embed sql/schema_migrations.sql
var schemaMigrationsDDL string

// Migration is one numbered schema change: one SQL statement, or several
// separated by a ";" at the end of a line, run in order. A migration is
// recorded once all its statements ran, so an interrupted one runs again
// from its first statement: each must be safe to repeat (IF NOT EXISTS, or
// a TRUNCATE before a copy). An ALTER TABLE … ADD COLUMN of one column is
// skipped where the table has the column already (18.16 has no ADD COLUMN
// IF NOT EXISTS), so a step may add a column and go on. A step that no
// upgrade path needs any more runs nothing: it is only recorded.
type Migration struct {
	Version int
	Name    string // file name, e.g. "0001_samples.sql"
	SQL     string
}

// Statements splits the migration into its statements.
func (m Migration) Statements() []string { return statements(m.SQL) }

// Migrations returns the single server's migrations in version order.
func Migrations() ([]Migration, error) {
	t, err := templates()
	if err != nil {
		return nil, err
	}
	return steps(t, "migrations", dialect{})
}

// steps returns the migrations in dir rendered for d, in version order.
func steps(t *template.Template, dir string, d dialect) ([]Migration, error) {
	names, err := fs.Glob(schemaFS, dir+"/*.sql")
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
		at := d
		at.Step = v
		sql, err := render(t, n, at)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: sql})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Migrate brings the database's schema up to date and records it in
// schema_migrations. A new database (nothing recorded) is given the
// current schema, which every migration leads to, and records all of them;
// an earlier release's gets the migrations it has not recorded, in order.
// It returns the names of the migrations it applied or recorded; running
// it again applies none.
func Migrate(ctx context.Context, conn driver.Conn) ([]string, error) {
	t, err := templates()
	if err != nil {
		return nil, err
	}
	ms, err := steps(t, "migrations", dialect{})
	if err != nil {
		return nil, err
	}
	schema, err := currentSchema(t, dialect{})
	if err != nil {
		return nil, err
	}
	return apply(ctx, conn, schemaMigrationsDDL, schema, ms)
}

// apply creates schema_migrations with ddl; then, if it records nothing,
// creates schema and records ms, or else applies and records the
// migrations of ms it does not hold yet.
func apply(ctx context.Context, conn driver.Conn, ddl string, schema []string, ms []Migration) ([]string, error) {
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
	if len(done) == 0 {
		return create(ctx, conn, schema, ms)
	}
	var applied []string
	for _, m := range ms {
		if done[m.Version] {
			continue
		}
		for i, st := range m.Statements() {
			added, err := columnAdded(ctx, conn, st)
			if err == nil && !added {
				err = conn.Exec(ctx, st)
			}
			if err != nil {
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

// addColumn matches a statement that adds one column, after its comment
// lines: ALTER TABLE [database.]table [ON CLUSTER name] ADD COLUMN column …
// (addColumns finds each ADD COLUMN of a statement: one is matched, more
// are run as they are).
var (
	addColumn  = regexp.MustCompile(`(?is)^ALTER\s+TABLE\s+(?:(\w+)\.)?(\w+)(?:\s+ON\s+CLUSTER\s+\S+)?\s+ADD\s+COLUMN\s+(\w+)\s`)
	addColumns = regexp.MustCompile(`(?i)\bADD\s+COLUMN\b`)
)

// columnAdded reports whether st adds one column that its table already
// has: a step interrupted after that statement runs again from its first.
// On a cluster the column is looked for on this server: ON CLUSTER DDL
// that reached it is in the cluster's queue, which every server runs.
func columnAdded(ctx context.Context, conn driver.Conn, st string) (bool, error) {
	var code []string
	for _, line := range strings.Split(st, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "--") {
			code = append(code, l)
		}
	}
	sql := strings.Join(code, "\n")
	m := addColumn.FindStringSubmatch(sql)
	if m == nil || len(addColumns.FindAllString(sql, 2)) != 1 {
		return false, nil
	}
	var n uint64
	err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = if(? = '', currentDatabase(), ?) AND table = ? AND name = ?",
		m[1], m[1], m[2], m[3]).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("looking for column %s of %s: %w", m[3], m[2], err)
	}
	return n > 0, nil
}

// create gives a new database the current schema and records every
// migration as applied, so that the next release upgrades it like one that
// went through them. Interrupted, it runs again from the start: every
// statement is a CREATE … IF NOT EXISTS.
func create(ctx context.Context, conn driver.Conn, schema []string, ms []Migration) ([]string, error) {
	for i, st := range schema {
		if err := conn.Exec(ctx, st); err != nil {
			return nil, fmt.Errorf("creating the schema (statement %d): %w", i+1, err)
		}
	}
	if err := record(ctx, conn, ms...); err != nil {
		return nil, fmt.Errorf("recording the migrations of the new schema: %w", err)
	}
	applied := make([]string, len(ms))
	for i, m := range ms {
		applied[i] = m.Name
	}
	return applied, nil
}

// record notes applied migrations, in one block. It goes through a batch:
// on 18.16 an INSERT with inline VALUES over the native protocol waits for
// data blocks.
func record(ctx context.Context, conn driver.Conn, ms ...Migration) error {
	b, err := conn.PrepareBatch(ctx, "INSERT INTO schema_migrations (version, name, applied_at)")
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	for _, m := range ms {
		if err := b.Append(uint32(m.Version), m.Name, now); err != nil {
			b.Abort()
			return err
		}
	}
	return b.Send()
}
