package queries

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest"
	"github.com/h3rum/h3rum/queries/internal/synth"
)

// The tests share one ClickHouse server (started in TestMain, ~1 s); each
// test gets a database of its own.
var (
	testServer *ingest.Local
	testDBs    atomic.Int64
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "h3rum-queries-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testServer = &ingest.Local{Dir: filepath.Join(dir, "clickhouse")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	if err := testServer.Start(ctx); err != nil {
		cancel()
		fmt.Fprintf(os.Stderr, "starting local ClickHouse for the queries tests: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	cancel()
	code := m.Run()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	if err := testServer.Stop(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "stopping local ClickHouse: %v\n", err)
	}
	cancel()
	os.RemoveAll(dir)
	os.Exit(code)
}

// newDB opens a fresh, migrated database on the shared server.
func newDB(t testing.TB) driver.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("q%d_%s", testDBs.Add(1), strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, t.Name()))
	dsn := strings.TrimSuffix(testServer.DSN(), ingest.LocalDatabase) + name
	conn, err := ingest.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("opening %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := ingest.Migrate(ctx, conn); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return conn
}

// load inserts rows in time-ordered batches of at most 50 000.
func load(t testing.TB, conn driver.Conn, rows []synth.Sample) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for len(rows) > 0 {
		n := min(len(rows), 50000)
		if err := synth.Insert(ctx, conn, rows[:n]); err != nil {
			t.Fatal(err)
		}
		rows = rows[n:]
	}
}
