package queries

import (
	"context"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

func init() {
	register(section{
		name: "timeline", part: estimatePart, cost: light,
		files: []string{"timeline_raw.sql", "timeline_rollup.sql", "timeline_runs.sql"},
		reads: []source{fromRaw, fromRollup, fromRunsTable},
		run: func(ctx context.Context, rep *build, conn driver.Conn) error {
			o := &rep.opts
			tl, err := timeline(ctx, conn, o, rep.win, query.RollupAnswers(o) && o.Source != model.SourceRaw)
			rep.Timeline = tl
			return err
		},
	})
}

// timeline reads selected samples per hour and outcome: raw reports from
// the runs table when it holds the selection.
func timeline(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, useRollup bool) ([]model.Hour, error) {
	name := query.SourceFile("timeline", useRollup)
	if !useRollup && query.RunsTableSelects(o) {
		name = "timeline_runs.sql"
	}
	st, err := prepare(name, o, w, nil)
	if err != nil {
		return nil, err
	}
	return timelineFrom(ctx, conn, st)
}

// timelineFrom reads a timeline query.
func timelineFrom(ctx context.Context, conn driver.Conn, st query.Stmt) ([]model.Hour, error) {
	out := []model.Hour{}
	err := st.Each(ctx, conn, "timeline", func(rows driver.Rows) error {
		var (
			h       time.Time
			outcome string
			n       uint64
		)
		if err := rows.Scan(&h, &outcome, &n); err != nil {
			return err
		}
		h = h.UTC()
		if len(out) == 0 || !out[len(out)-1].Hour.Equal(h) {
			out = append(out, model.Hour{Hour: h})
		}
		last := &out[len(out)-1]
		switch outcome {
		case model.OutcomeH2:
			last.H2 += int(n)
		case model.OutcomeH3:
			last.H3 += int(n)
		case model.OutcomeWantedH3GotH2:
			last.WantedH3GotH2 += int(n)
		default:
			last.Other += int(n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
