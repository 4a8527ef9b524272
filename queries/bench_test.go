package queries

import (
	"context"
	"testing"

	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/synth"
)

// BenchmarkReport times the default report and its point estimates
// (Estimate) on 20 000 runs (280 000 rows), raw and from the rollup, on
// ClickHouse 18.16 and, with storetest.ChdbEnv set, 26.x;
// `go run ./collector/cmd/benchreport` does the same at 10 M rows.
func BenchmarkReport(b *testing.B) {
	rows := synth.All(synth.Config{Seed: 8, Runs: 20000})
	for _, e := range []storetest.Engine{storetest.Managed, storetest.Chdb} {
		b.Run(string(e), func(b *testing.B) {
			conn := storetest.DBOn(b, e)
			load(b, conn, rows)
			for _, src := range []model.Source{model.SourceRaw, model.SourceRollup} {
				o := model.Options{Since: testSince, Until: testUntil, Source: src}
				b.Run("complete/"+string(src), func(b *testing.B) {
					for b.Loop() {
						if _, err := Run(context.Background(), conn, o); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run("points/"+string(src), func(b *testing.B) {
					for b.Loop() {
						if _, err := Estimate(context.Background(), conn, o); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
