package queries

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

func init() {
	register(section{
		name: "excluded", part: completePart, cost: light, headline: true, // availability per run
		files: []string{"excluded.sql", "excluded_rollup.sql", "excluded_runs_samples.sql", "excluded_runs_table.sql"},
		reads: []source{fromRaw, fromRollup, fromRunsTable},
		run: func(ctx context.Context, rep *build, conn driver.Conn) (err error) {
			rep.perRun, rep.windowAvail, err = excluded(ctx, conn, &rep.opts, rep.win, rep.groups.get)
			return err
		},
	})
}

// perRunCounts are what excluded counts for other sections: availability
// per run, and the intention-to-treat view's runs by origin (h2, h3).
type perRunCounts struct {
	availability           *model.Availability
	ittRuns, ittFailedRuns [2]int
}

// excluded reads, per group, the design's runs by exclusion reason, HTTP/3
// availability per run and the intention-to-treat view's run counts
// (sql/excluded.sql, excludedQuery), and where the runs table holds the
// selection availability per trend window × group as well. It reads every
// run of the window, so it is part of the complete report, not the
// estimate. Availability per run and the run counts are returned, for the
// caller to set once the bootstrap has set (and availability per run
// replaces) the per-request one, and the intention-to-treat view and the
// trend are read.
func excluded(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, get func(string) *model.Group) (map[*model.Group]perRunCounts, map[trendCell]*model.Availability, error) {
	st, err := excludedQuery(o, w)
	if err != nil {
		return nil, nil, err
	}
	type sums struct {
		runs, withH3, available, coldH2, coldH3 uint64
		byReason                                []uint64
		ittRuns, ittFailed                      [2]uint64
	}
	byGroup := map[string]*sums{}
	var windows map[trendCell]*model.Availability
	if query.RunsTableHolds(o) {
		windows = map[trendCell]*model.Availability{}
	}
	var (
		t       uint32
		grp     string
		r       sums
		reasons []uint64
	)
	err = st.Each(ctx, conn, "excluded runs", func(rows driver.Rows) error {
		if err := rows.Scan(&t, &grp, &r.runs, &reasons, &r.coldH2, &r.coldH3, &r.withH3, &r.available,
			&r.ittRuns[0], &r.ittRuns[1], &r.ittFailed[0], &r.ittFailed[1]); err != nil {
			return err
		}
		if windows != nil {
			windows[trendCell{t: t, grp: grp}] = model.RunAvailability(int(r.withH3), int(r.available))
		}
		g := byGroup[grp]
		if g == nil {
			g = &sums{byReason: make([]uint64, len(reasons))}
			byGroup[grp] = g
		}
		g.runs, g.withH3, g.available, g.coldH2, g.coldH3 = g.runs+r.runs, g.withH3+r.withH3, g.available+r.available, g.coldH2+r.coldH2, g.coldH3+r.coldH3
		for i := range g.ittRuns {
			g.ittRuns[i] += r.ittRuns[i]
			g.ittFailed[i] += r.ittFailed[i]
		}
		for i := range min(len(reasons), len(g.byReason)) {
			g.byReason[i] += reasons[i]
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	counts := map[*model.Group]perRunCounts{}
	for grp, s := range byGroup {
		g := get(grp)
		g.DesignRuns = int(s.runs)
		g.Excluded = map[string]int{}
		for i, n := range s.byReason {
			if i < len(store.ExclusionNames) && n > 0 {
				g.Excluded[store.ExclusionNames[i]] = int(n)
			}
		}
		g.ColdRuns = map[string]int{"h2": int(s.coldH2), "h3": int(s.coldH3)}
		counts[g] = perRunCounts{availability: model.RunAvailability(int(s.withH3), int(s.available)),
			ittRuns: [2]int{int(s.ittRuns[0]), int(s.ittRuns[1])}, ittFailedRuns: [2]int{int(s.ittFailed[0]), int(s.ittFailed[1])}}
	}
	return counts, windows, nil
}

// excludedQuery returns excluded's query: for reports from the rollup,
// excluded_rollup.sql, which reads run_counts for the window's whole hours
// and the runs table for its partial ones; else excluded.sql, over the
// runs table, or over the samples for a selection by collector (a
// per-sample column) and for agent reports (the runs table holds browser
// runs only), then in one window.
func excludedQuery(o *model.Options, w query.Window) (query.Stmt, error) {
	if query.RunsTableHolds(o) && query.RollupAnswers(o) && o.Source != model.SourceRaw {
		return prepare("excluded_rollup.sql", o, w, nil)
	}
	return prepare("excluded.sql", o, w, func(s *query.Shape) { s.OneWindow = !s.RunsTable })
}
