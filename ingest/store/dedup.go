package store

import (
	"context"
	_ "embed"
	"slices"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"
)

//go:embed sql/existing_runs.sql
var existingRunsSQL string

// Stored returns the runs among runs that the samples table already holds.
// An insert that may repeat an earlier one — a spool replay after a crash,
// a retry after an error that may have come after the server committed —
// leaves those out, so every run is stored once and the rollup view, which
// sees every inserted block, counts it once.
func Stored(ctx context.Context, conn driver.Conn, runs []*Run) (map[uuid.UUID]bool, error) {
	var (
		sites       []string
		ids         []string
		first, last int64
	)
	for _, r := range runs {
		if r.Report == nil || len(r.Report.Samples) == 0 {
			continue
		}
		t := r.Received.UTC().Unix()
		if len(ids) == 0 || t < first {
			first = t
		}
		if len(ids) == 0 || t > last {
			last = t
		}
		if !slices.Contains(sites, r.Report.Site) {
			sites = append(sites, r.Report.Site)
		}
		ids = append(ids, uuid.UUID(r.Report.RunID).String())
	}
	if len(ids) == 0 {
		return map[uuid.UUID]bool{}, nil
	}
	return storedIDs(ctx, conn, "runs", existingRunsSQL, sites, first, last, ids)
}
