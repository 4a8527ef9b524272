package chdb_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/h3rum/h3rum/ingest/store/chdb"
)

func TestMain(m *testing.M) {
	if code, ok := chdb.Serve(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestStartInKeepsData stores a row with a server started in a folder,
// stops it and finds the row with a second server started there, while
// Start's folder is gone after Stop.
func TestStartInKeepsData(t *testing.T) {
	lib := os.Getenv("H3RUM_TEST_CHDB")
	if lib == "" {
		t.Fatal("H3RUM_TEST_CHDB is not set (make chdb fetches the library; make test sets it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "kept")
	count := func(create bool) uint64 {
		t.Helper()
		srv, err := chdb.StartIn(ctx, lib, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := srv.Stop(); err != nil {
				t.Error(err)
			}
		}()
		dsn, err := srv.DSN("kept")
		if err != nil {
			t.Fatal(err)
		}
		opts, err := clickhouse.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := clickhouse.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if create {
			if err := conn.Exec(ctx, "CREATE TABLE t (x UInt8) ENGINE = MergeTree ORDER BY x"); err != nil {
				t.Fatal(err)
			}
			if err := conn.Exec(ctx, "INSERT INTO t VALUES (7)"); err != nil {
				t.Fatal(err)
			}
		}
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM t WHERE x = 7").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(true); n != 1 {
		t.Fatalf("the first server counts %d rows, want 1", n)
	}
	if n := count(false); n != 1 {
		t.Fatalf("a server started again in its folder counts %d rows, want 1", n)
	}

	srv, err := chdb.Start(ctx, lib, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.DSN("gone"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if srv.Dir() == "" {
		t.Fatal("Start's server has no folder")
	}
	if _, err := os.Stat(srv.Dir()); !os.IsNotExist(err) {
		t.Errorf("Start's folder %s after Stop: %v, want it removed", srv.Dir(), err)
	}
}
