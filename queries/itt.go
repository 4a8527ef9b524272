package queries

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

func init() {
	register(section{
		name: "itt", part: completePart, cost: light,
		files: []string{"itt_raw.sql", "itt_rollup.sql", "itt_runs.sql"},
		reads: []source{fromRaw, fromRollup, fromRunsTable},
		run: func(ctx context.Context, rep *Report, conn driver.Conn) (err error) {
			rep.ittFromRollup, err = itt(ctx, conn, &rep.opts, rep.win, rep.groups.get)
			return err
		},
	})
}

// ITT is the intention-to-treat view of a group: every request by the
// origin it was sent to, failures at the timeout (sql/itt_*.sql). It answers
// "what did a visitor get by being sent to the H3 origin", fallbacks,
// failures and excluded runs included, beside the headline's like-for-like
// comparison.
type ITT struct {
	H2   *ITTStats `json:"h2"`   // requests sent to the H2 origin
	H3   *ITTStats `json:"h3"`   // requests sent to the H3 origin
	Diff []Diff    `json:"diff"` // H3 − H2 point differences; [] unless both
}

// ITTStats are one origin's requests in the intention-to-treat view.
type ITTStats struct {
	Runs           int          `json:"runs"`
	Samples        int          `json:"samples"`
	Failed         int          `json:"failed"`      // failed or timed-out requests
	FailedRuns     int          `json:"failed_runs"` // runs with at least one
	RunFailureRate float64      `json:"run_failure_rate"`
	RunFailureLow  *float64     `json:"run_failure_ci_low"` // 95 % Wilson interval over runs
	RunFailureHigh *float64     `json:"run_failure_ci_high"`
	Percentiles    []Percentile `json:"percentiles"` // t-digest, failures at 10 000 ms; no intervals
}

// itt reads the intention-to-treat view of every group: from the rollup
// plus the window's raw edges where the rollup has the grouping, else from
// raw rows: the runs table's where it has the grouping (sql/itt_rollup.sql,
// sql/itt_runs.sql, sql/itt_raw.sql). Its selection is fixed
// (every parallel request of the design's non-bot runs), so the report's
// widening options do not matter here. It reports whether the view came
// from the rollup, whose run counts excluded.sql supplies.
func itt(ctx context.Context, conn driver.Conn, o *Options, w window, get func(string) *Group) (fromRollup bool, err error) {
	useRollup := o.Source != SourceRaw && (o.By == "continent" || o.By == "country" || o.By == "none")
	name := "itt_raw.sql"
	switch {
	case useRollup:
		name = "itt_rollup.sql"
	case o.runsTableHolds():
		name = "itt_runs.sql"
	}
	st, err := prepare(name, o, w, nil)
	if err != nil {
		return false, err
	}
	return useRollup, ittFrom(ctx, conn, st, get)
}

// ittFrom reads an intention-to-treat query.
func ittFrom(ctx context.Context, conn driver.Conn, st stmt, get func(string) *Group) error {
	var touched []*Group
	err := st.each(ctx, conn, "the intention-to-treat view", func(rows driver.Rows) error {
		var (
			grp, sentTo                     string
			runs, samples, failed, failRuns uint64
			qs                              []float32
		)
		if err := rows.Scan(&grp, &sentTo, &runs, &samples, &failed, &failRuns, &qs); err != nil {
			return err
		}
		g := get(grp)
		if g.ITT == nil {
			g.ITT = &ITT{Diff: []Diff{}}
			touched = append(touched, g)
		}
		s := &ITTStats{Samples: int(samples), Failed: int(failed), Percentiles: levels(qs)}
		s.setRuns(int(runs), int(failRuns))
		if sentTo == "h3" {
			g.ITT.H3 = s
		} else {
			g.ITT.H2 = s
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, g := range touched {
		if t := g.ITT; t != nil && t.H2 != nil && t.H3 != nil {
			t.Diff = pointDiffs(&Stats{Percentiles: t.H2.Percentiles}, &Stats{Percentiles: t.H3.Percentiles})
		}
	}
	return nil
}

// setRuns sets the runs with requests to the origin, those with a failed
// one, and their share with its 95 % Wilson interval (s may be nil).
func (s *ITTStats) setRuns(runs, failed int) {
	if s == nil {
		return
	}
	s.Runs, s.FailedRuns = runs, failed
	s.RunFailureRate, s.RunFailureLow, s.RunFailureHigh = 0, nil, nil
	if a := runAvailability(runs, failed); a != nil {
		s.RunFailureRate, s.RunFailureLow, s.RunFailureHigh = a.Share, a.CILow, a.CIHigh
	}
}
