package queries

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/synth"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// newDB opens a fresh, migrated database on the ClickHouse server the
// package's tests share.
func newDB(t testing.TB) driver.Conn { return storetest.DB(t) }

// load inserts rows in time-ordered batches of at most 50 000.
func load(t testing.TB, conn driver.Conn, rows []synth.Sample) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for len(rows) > 0 {
		// Whole runs only: ingest inserts a run in one block, and a run
		// cut in two would be checked for exclusions as two partial runs.
		n := min(len(rows), 50000)
		for n < len(rows) && rows[n].RunID == rows[n-1].RunID {
			n++
		}
		if err := synth.Insert(ctx, conn, rows[:n]); err != nil {
			t.Fatal(err)
		}
		rows = rows[n:]
	}
}
