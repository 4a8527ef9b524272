package queries

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

func init() {
	register(section{
		name: "itt", part: completePart, cost: light,
		files: []string{"itt_raw.sql", "itt_rollup.sql", "itt_runs.sql"},
		reads: []source{fromRaw, fromRollup, fromRunsTable},
		run: func(ctx context.Context, rep *build, conn driver.Conn) (err error) {
			rep.ittFromRollup, err = itt(ctx, conn, &rep.opts, rep.win, rep.groups.get)
			return err
		},
	})
}

// itt reads the intention-to-treat view of every group: from the rollup
// plus the window's raw edges where the rollup has the grouping, else from
// raw rows: the runs table's where it has the grouping (sql/itt_rollup.sql,
// sql/itt_runs.sql, sql/itt_raw.sql). Its selection is fixed
// (every parallel request of the design's non-bot runs), so the report's
// widening options do not matter here. It reports whether the view came
// from the rollup, whose run counts excluded.sql supplies.
func itt(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, get func(string) *model.Group) (fromRollup bool, err error) {
	useRollup := o.Source != model.SourceRaw && (o.By == "continent" || o.By == "country" || o.By == "none")
	name := "itt_raw.sql"
	switch {
	case useRollup:
		name = "itt_rollup.sql"
	case query.RunsTableHolds(o):
		name = "itt_runs.sql"
	}
	st, err := prepare(name, o, w, nil)
	if err != nil {
		return false, err
	}
	return useRollup, ittFrom(ctx, conn, st, get)
}

// ittFrom reads an intention-to-treat query.
func ittFrom(ctx context.Context, conn driver.Conn, st query.Stmt, get func(string) *model.Group) error {
	var touched []*model.Group
	err := st.Each(ctx, conn, "the intention-to-treat view", func(rows driver.Rows) error {
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
			g.ITT = &model.ITT{Diff: []model.Diff{}}
			touched = append(touched, g)
		}
		s := &model.ITTStats{Samples: int(samples), Failed: int(failed), Percentiles: levels(qs)}
		s.SetRuns(int(runs), int(failRuns))
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
			t.Diff = model.PointDiffs(&model.Stats{Percentiles: t.H2.Percentiles}, &model.Stats{Percentiles: t.H3.Percentiles})
		}
	}
	return nil
}
