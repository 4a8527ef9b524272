package render

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/synth"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// newDB opens a fresh, migrated database on the ClickHouse server the
// package's tests share.
func newDB(t testing.TB) driver.Conn { return storetest.DB(t) }

// load inserts rows in time-ordered batches of whole runs.
func load(t testing.TB, conn driver.Conn, rows []synth.Sample) {
	t.Helper()
	synth.Load(t, conn, rows)
}

// The window of synth.All's runs, not on an hour: rollup edges come from
// raw rows.
var (
	testSince = time.Date(2025, 1, 1, 0, 30, 0, 0, time.UTC)
	testUntil = time.Date(2025, 1, 2, 23, 15, 0, 0, time.UTC)
)

// renderDashboard is the whole page of r, as a Dashboard writes it.
func renderDashboard(r *model.Report, o *model.Options, live bool) ([]byte, error) {
	var b bytes.Buffer
	err := NewDashboard(r, o, live).Write(&b)
	return b.Bytes(), err
}
