package store

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon"
)

// Batch buffers rows of the samples table column by column, for one
// INSERT. The zero value is ready to use; Reset keeps the buffers'
// capacity for the next batch.
type Batch struct {
	rowBuffer[*runRow, beacon.Sample]
	row runRow // the run being added
}

// Add appends one row per sample of run.
func (b *Batch) Add(run *Run) {
	if run.Report == nil {
		return
	}
	x, cold := classifyRun(run)
	flags, at := runFlagsOf(run, cold)
	b.row = runRow{Run: run, exclusions: x, cold: cold, flags: flags, flagsAt: at, facts: factFlagsOf(run)}
	b.add(samplesTable, &b.row, run.Report.Samples, run.Handshakes)
	b.row = runRow{}
}

// Insert sends the buffered rows as one INSERT. The batch is unchanged, so
// a failed insert can be retried.
func (b *Batch) Insert(ctx context.Context, conn driver.Conn) error {
	return b.insert(ctx, conn, samplesTable)
}
