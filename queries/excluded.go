package queries

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
)

// perRunCounts are what excluded counts for other sections: availability
// per run, and the intention-to-treat view's runs by origin (h2, h3).
type perRunCounts struct {
	availability           *Availability
	ittRuns, ittFailedRuns [2]int
}

// excluded reads, per group, the design's runs by exclusion reason, HTTP/3
// availability per run and the intention-to-treat view's run counts
// (sql/excluded.sql, excludedSQL). It reads every run of the window, so it
// is part of the complete report, not the estimate. Availability per run
// and the run counts are returned, for the caller to set once the
// bootstrap has set (and availability per run replaces) the per-request
// one, and the intention-to-treat view is read.
func excluded(ctx context.Context, conn driver.Conn, o *Options, w window, get func(string) *Group) (map[*Group]perRunCounts, error) {
	q, err := excludedSQL(o)
	if err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, q, b01(o.IncludeBots), b01(o.IncludeBots), w.since, w.until, o.Site, o.Site)
	if err != nil {
		return nil, fmt.Errorf("querying excluded runs: %w", err)
	}
	counts := map[*Group]perRunCounts{}
	defer rows.Close()
	for rows.Next() {
		var (
			grp                     string
			runs, withH3, available uint64
			coldH2, coldH3          uint64
			byReason                []uint64
			ittRuns, ittFailed      [2]uint64
		)
		if err := rows.Scan(&grp, &runs, &byReason, &coldH2, &coldH3, &withH3, &available,
			&ittRuns[0], &ittRuns[1], &ittFailed[0], &ittFailed[1]); err != nil {
			return nil, fmt.Errorf("reading excluded runs: %w", err)
		}
		g := get(grp)
		g.DesignRuns = int(runs)
		g.Excluded = map[string]int{}
		for i, n := range byReason {
			if i < len(store.ExclusionNames) && n > 0 {
				g.Excluded[store.ExclusionNames[i]] = int(n)
			}
		}
		g.ColdRuns = map[string]int{"h2": int(coldH2), "h3": int(coldH3)}
		counts[g] = perRunCounts{availability: runAvailability(int(withH3), int(available)),
			ittRuns: [2]int{int(ittRuns[0]), int(ittRuns[1])}, ittFailedRuns: [2]int{int(ittFailed[0]), int(ittFailed[1])}}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading excluded runs: %w", err)
	}
	return counts, nil
}

// excludedSQL is excluded.sql with its runs: from the runs table, or from
// the samples by collector (a per-sample column) and for agent reports
// (the runs table holds browser runs only).
func excludedSQL(o *Options) (string, error) {
	runs := "excluded_runs_table.sql"
	if !o.runsTableHolds() {
		runs = "excluded_runs_samples.sql"
	}
	return excludedWith(o, runs)
}

// excludedWith is excluded.sql with the runs subquery file runs.
func excludedWith(o *Options, runs string) (string, error) {
	outer, err := query("excluded.sql", o)
	if err != nil {
		return "", err
	}
	inner, err := query(runs, o)
	if err != nil {
		return "", err
	}
	return strings.Replace(outer, "/*RUNS*/", inner, 1), nil
}

// runAvailability is the share of runs with every H3-batch request on h3,
// with a 95 % Wilson score interval (runs are independent; nil when no
// run had an H3 batch).
func runAvailability(runs, available int) *Availability {
	if runs == 0 {
		return nil
	}
	n, p := float64(runs), float64(available)/float64(runs)
	const z = 1.959963984540054
	den := 1 + z*z/n
	center := (p + z*z/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / den
	lo, hi := math.Max(0, center-half), math.Min(1, center+half)
	return &Availability{Unit: "runs", WantedH3: runs, GotH3: available, Share: math.Round(p*1e6) / 1e6,
		CILow: ptr(math.Round(lo*1e6) / 1e6), CIHigh: ptr(math.Round(hi*1e6) / 1e6)}
}
