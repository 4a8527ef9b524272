package queries

import (
	"flag"
	"os"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/synth"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// newDB opens a fresh, migrated database on the ClickHouse server the
// package's tests share.
func newDB(t testing.TB) driver.Conn { return storetest.DB(t) }

// load inserts rows in time-ordered batches of whole runs.
func load(t testing.TB, conn driver.Conn, rows []synth.Sample) {
	t.Helper()
	synth.Load(t, conn, rows)
}
