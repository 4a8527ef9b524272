package queries

import (
	"context"
	"testing"

	"github.com/h3rum/h3rum/queries/synth"
)

// BenchmarkReport times the default report on 20 000 runs (280 000 rows);
// `go run ./collector/cmd/benchreport` does the same at 10 M rows.
func BenchmarkReport(b *testing.B) {
	conn := newDB(b)
	load(b, conn, synth.All(synth.Config{Seed: 8, Runs: 20000}))
	for _, src := range []Source{SourceRaw, SourceRollup} {
		b.Run(string(src), func(b *testing.B) {
			for b.Loop() {
				if _, err := Run(context.Background(), conn, Options{Since: testSince, Until: testUntil, Source: src}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
