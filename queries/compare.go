package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/queries/model"
)

// A comparison asks whether HTTP/3's advantage moved between two windows,
// e.g. before and after a CDN, kernel or congestion-control change: per
// group, the change of the H3 − H2 difference at one percentile (a
// difference of differences) with its 95 % interval.
//
// The two windows must not overlap, so no run is in both and their
// bootstraps are independent. Each window's difference has its cluster
// bootstrap interval; its standard error is SE = width / (2 z₀.₉₇₅), as the
// power rule reads it (verdict.go), and the change's interval is
// (after − before) ± z₀.₉₇₅ √(SE_before² + SE_after²), the normal
// approximation of the difference of two independent estimates. Its
// minimum detectable change is (z₀.₉₇₅ + z₀.₈₀) √(SE_before² + SE_after²).

// Compare runs the report o over its own window (after) and over the
// baseline window [baseSince, baseUntil) (before), with the same grouping,
// filters and design (o's, or the baseline's most common one in both),
// and compares them group by group at o's verdict percentile.
func Compare(ctx context.Context, conn driver.Conn, o model.Options, baseSince, baseUntil time.Time) (*model.Comparison, error) {
	after := o
	if err := after.Validate(); err != nil {
		return nil, err
	}
	before := o
	before.Since, before.Until = baseSince, baseUntil
	if err := before.Validate(); err != nil {
		return nil, err
	}
	if before.Since.Before(after.Until) && after.Since.Before(before.Until) {
		return nil, fmt.Errorf("%w: the baseline [%s, %s) overlaps the window [%s, %s): a comparison needs windows without a common run",
			model.ErrInvalidOptions, before.Since.Format(time.RFC3339), before.Until.Format(time.RFC3339), after.Since.Format(time.RFC3339), after.Until.Format(time.RFC3339))
	}
	b, err := Run(ctx, conn, before)
	if err != nil {
		return nil, fmt.Errorf("compare: the before window: %w", err)
	}
	if !after.Design.Set && !after.Design.All {
		after.Design = b.Design
		after.Design.Set = true
	}
	a, err := Run(ctx, conn, after)
	if err != nil {
		return nil, fmt.Errorf("compare: the after window: %w", err)
	}
	return model.NewComparison(b, a, after.VerdictPercentile()), nil
}
