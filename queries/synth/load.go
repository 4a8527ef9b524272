package synth

import (
	"context"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Load inserts rows for a test in time-ordered batches of at most 50 000
// whole runs (ingest inserts a run in one block, and a run cut in two
// would be checked for exclusions as two partial runs), failing tb on an
// error.
func Load(tb testing.TB, conn driver.Conn, rows []Sample) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for len(rows) > 0 {
		n := min(len(rows), 50000)
		for n < len(rows) && rows[n].RunID == rows[n-1].RunID {
			n++
		}
		if err := Insert(ctx, conn, rows[:n]); err != nil {
			tb.Fatal(err)
		}
		rows = rows[n:]
	}
}
