package store

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Batch buffers rows of the samples table column by column, for one
// INSERT. The zero value is ready to use; Reset keeps the buffers'
// capacity for the next batch.
type Batch struct {
	cols []column
	rows int
	row  runRow // the run being added
}

// Add appends one row per sample of run.
func (b *Batch) Add(run *Run) {
	if run.Report == nil {
		return
	}
	if b.cols == nil {
		b.cols = sampleColumns()
	}
	x, cold := classifyRun(run)
	b.row = runRow{Run: run, exclusions: x, cold: cold}
	for _, c := range b.cols {
		c.add(&b.row, run.Report.Samples)
		c.add(&b.row, run.Handshakes)
	}
	b.row = runRow{}
	b.rows += len(run.Report.Samples) + len(run.Handshakes)
}

// Rows is the number of rows buffered.
func (b *Batch) Rows() int { return b.rows }

// Reset empties the batch.
func (b *Batch) Reset() {
	for _, c := range b.cols {
		c.reset()
	}
	b.rows = 0
}

// Insert sends the buffered rows as one INSERT. The batch is unchanged, so
// a failed insert can be retried.
func (b *Batch) Insert(ctx context.Context, conn driver.Conn) error {
	if b.rows == 0 {
		return nil
	}
	return insertBuffers(ctx, conn, "samples", insertSamplesSQL, b.cols)
}
