package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

func TestMigrateAppliesOnceThenNoop(t *testing.T) {
	l := storetest.Private(t)
	ctx := context.Background()
	conn, err := store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	all, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	applied, err := store.Migrate(ctx, conn)
	if err != nil {
		t.Fatalf("first migrate: %v", err)
	}
	if len(applied) != len(all) || len(all) == 0 {
		t.Fatalf("first migrate applied %v, want all %d migrations", applied, len(all))
	}
	again, err := store.Migrate(ctx, conn)
	if err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if len(again) != 0 {
		t.Fatalf("second migrate applied %v, want none", again)
	}
	var tables []string
	rows, err := conn.Query(ctx, "SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	for _, want := range []string{"samples", "samples_rollup", "samples_rollup_mv", "schema_migrations"} {
		if !slices.Contains(tables, want) {
			t.Errorf("table %s missing after migrate; have %v", want, tables)
		}
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if int(n) != len(all) {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(all))
	}
}

func TestLocalRestartKeepsPortAndData(t *testing.T) {
	l := storetest.Private(t)
	ctx := context.Background()
	conn, err := store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "CREATE TABLE t (x UInt32) ENGINE = MergeTree ORDER BY x"); err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "INSERT INTO t (x) SELECT 7"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	dsn := l.DSN()
	recorded, err := store.ReadLocalDSN(l.Dir)
	if err != nil || recorded != dsn {
		t.Fatalf("ReadLocalDSN = %q, %v; want %q", recorded, err, dsn)
	}
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(l.Dir, store.AddressFile)); !os.IsNotExist(err) {
		t.Errorf("address file still present after Stop: %v", err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if l.DSN() != dsn {
		t.Errorf("DSN changed across restart: %s → %s", dsn, l.DSN())
	}
	conn, err = store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var x uint32
	if err := conn.QueryRow(ctx, "SELECT x FROM t").Scan(&x); err != nil || x != 7 {
		t.Fatalf("after restart: x = %d, %v; want 7", x, err)
	}
}

func TestLocalMissingBinary(t *testing.T) {
	l := &store.Local{Dir: t.TempDir(), Binary: filepath.Join(t.TempDir(), "no-such-clickhouse")}
	if err := l.Start(context.Background()); err == nil {
		l.Stop(context.Background())
		t.Fatal("Start with a missing binary succeeded")
	}
}

func TestOpenRejectsBadDSN(t *testing.T) {
	for _, dsn := range []string{"http://127.0.0.1:8123/db", "::not a dsn"} {
		if c, err := store.Open(context.Background(), dsn); err == nil {
			c.Close()
			t.Errorf("store.Open(%q) succeeded", dsn)
		}
	}
}

func TestOpenCreatesMissingDatabase(t *testing.T) {
	l := storetest.Private(t)
	dsn := fmt.Sprintf("clickhouse://default@127.0.0.1:%d/fresh_db", l.Port)
	conn, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open with a missing database: %v", err)
	}
	defer conn.Close()
	var db string
	if err := conn.QueryRow(context.Background(), "SELECT currentDatabase()").Scan(&db); err != nil || db != "fresh_db" {
		t.Fatalf("currentDatabase() = %q, %v; want fresh_db", db, err)
	}
}
