package queries

import (
	"context"
	"math"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

func init() {
	register(section{
		name: "handshakes", part: completePart, cost: light,
		files: []string{"handshakes.sql", "handshakes_rollup.sql"},
		reads: []source{fromRaw, fromRollup},
		run: func(ctx context.Context, rep *build, conn driver.Conn) error {
			return handshakes(ctx, conn, &rep.opts, rep.win, rep.useRollup, rep.groups.get)
		},
	})
}

// handshakes reads every group's requests on new connections: from the
// rollup and the window's edges where the report's figures come from the
// rollup (sql/handshakes_rollup.sql), else from every sample of the window.
func handshakes(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, useRollup bool, get func(string) *model.Group) error {
	name := "handshakes.sql"
	if useRollup {
		name = "handshakes_rollup.sql"
	}
	st, err := prepare(name, o, w, nil)
	if err != nil {
		return err
	}
	return st.Each(ctx, conn, "handshakes", func(rows driver.Rows) error {
		var (
			grp, proto     string
			kind           string
			n, retried     uint64
			qs, qc         []float32
			fastest        float32
			resumed, early float64
		)
		if err := rows.Scan(&grp, &proto, &kind, &n, &qs, &qc, &fastest, &resumed, &early, &retried); err != nil {
			return err
		}
		g := get(grp)
		g.Handshakes = append(g.Handshakes, model.Handshake{Proto: proto, Kind: kind, Samples: int(n), Percentiles: levels(qs), ConnectMS: levels(qc), FastestMS: model.Round3(float64(fastest)),
			ResumedShare: math.Round(resumed*1e6) / 1e6, EarlyShare: math.Round(early*1e6) / 1e6, Retried: int(retried)})
		return nil
	})
}

// levels pairs quantile values with the report's percentiles.
func levels(qs []float32) []model.Percentile {
	out := make([]model.Percentile, len(percentiles))
	for i, p := range percentiles {
		out[i].P = p
		if i < len(qs) && !math.IsNaN(float64(qs[i])) {
			out[i].MS = model.Round3(float64(qs[i]))
		}
	}
	return out
}
