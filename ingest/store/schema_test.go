package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
)

// schemaOf returns what defines every table and view of conn's database
// but schema_migrations: its SHOW CREATE TABLE and its columns as
// system.columns lists them, with the database's name as DB.
func schemaOf(t testing.TB, conn driver.Conn) map[string]string {
	t.Helper()
	ctx := context.Background()
	var db string
	if err := conn.QueryRow(ctx, "SELECT currentDatabase()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT name FROM system.tables WHERE database = currentDatabase() AND name != 'schema_migrations' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	rows.Close()
	out := map[string]string{}
	for _, n := range names {
		var create string
		if err := conn.QueryRow(ctx, "SHOW CREATE TABLE "+n).Scan(&create); err != nil {
			t.Fatalf("SHOW CREATE TABLE %s: %v", n, err)
		}
		var b strings.Builder
		b.WriteString(strings.ReplaceAll(create, db, "DB"))
		cols, err := conn.Query(ctx, "SELECT name, type, default_kind, default_expression FROM system.columns WHERE database = currentDatabase() AND table = ?", n) // in definition order
		if err != nil {
			t.Fatal(err)
		}
		for cols.Next() {
			var name, ty, kind, expr string
			if err := cols.Scan(&name, &ty, &kind, &expr); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "\n  %s %s %s %s", name, ty, kind, expr)
		}
		cols.Close()
		out[n] = b.String()
	}
	if len(out) == 0 {
		t.Fatal("no tables")
	}
	return out
}

// sameSchema reports the tables and views in which got and want differ.
func sameSchema(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	for n, w := range want {
		if g, ok := got[n]; !ok {
			t.Errorf("%s: no %s", what, n)
		} else if g != w {
			t.Errorf("%s: %s is\n%s\nwant\n%s", what, n, g, w)
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: %s should not be there", what, n)
		}
	}
}

// TestNewSchemaIsReleasedSchema creates a database the new way (the
// current schema, schema/) and one through every released step, and holds
// the two to the same tables and views, column for column, as SHOW CREATE
// TABLE and system.columns show them; a new database records every step.
func TestNewSchemaIsReleasedSchema(t *testing.T) {
	ctx := context.Background()
	fresh := emptyDB(t)
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	applied, err := store.Migrate(ctx, fresh)
	if err != nil {
		t.Fatalf("creating the schema: %v", err)
	}
	if len(applied) != len(ms) {
		t.Errorf("a new database recorded %d migrations, want all %d", len(applied), len(ms))
	}
	if n := countRows(t, fresh, "SELECT count() FROM schema_migrations"); int(n) != len(ms) {
		t.Errorf("schema_migrations holds %d rows, want %d", n, len(ms))
	}
	released := emptyDB(t)
	applyReleased(t, released, "migrations", upTo(ms[len(ms)-1].Version), nil)
	if again, err := store.Migrate(ctx, released); err != nil || len(again) != 0 {
		t.Errorf("migrating a database of this release applied %v, %v", again, err)
	}
	want := schemaOf(t, released)
	for _, n := range []string{"samples", "samples_rollup", "samples_rollup_mv", "nel_reports", "runs", "runs_mv", "runs_by_id", "runs_by_id_mv", "run_facts", "run_facts_mv", "run_counts", "run_counts_mv", "run_fact_counts", "run_fact_counts_mv", "failure_counts", "failure_counts_mv", "itt_rollup", "itt_rollup_mv", "handshake_rollup", "handshake_rollup_mv", "handshake_requests", "handshake_requests_mv",
		"samples_rollup_5m", "samples_rollup_5m_mv", "itt_rollup_5m", "itt_rollup_5m_mv", "run_counts_5m", "run_counts_5m_mv",
		"run_fact_counts_5m", "run_fact_counts_5m_mv", "failure_counts_5m", "failure_counts_5m_mv", "handshake_rollup_5m", "handshake_rollup_5m_mv"} {
		if _, ok := want[n]; !ok {
			t.Errorf("the released steps made no %s", n)
		}
	}
	sameSchema(t, "new database", schemaOf(t, fresh), want)
	if again, err := store.Migrate(ctx, fresh); err != nil || len(again) != 0 {
		t.Errorf("migrating the new database again applied %v, %v", again, err)
	}
}
