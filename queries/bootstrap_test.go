package queries

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// weightedQuantiles must equal type-7 quantiles of the replicate written
// out in full, for random data, weights (zeros included) and quantiles.
func TestWeightedQuantilesMatchesExpansion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	qs := []float64{0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1}
	for trial := 0; trial < 2000; trial++ {
		m := 1 + rng.IntN(40)
		var xs []obs
		for r := 0; r < m; r++ {
			for k := rng.IntN(6); k > 0; k-- {
				xs = append(xs, obs{v: float64(rng.IntN(50)) + rng.Float64(), run: int32(r)})
			}
		}
		slices.SortFunc(xs, func(a, b obs) int {
			if a.v != b.v {
				return map[bool]int{true: -1, false: 1}[a.v < b.v]
			}
			return int(a.run - b.run)
		})
		w := make([]int32, m)
		for i := 0; i < m; i++ {
			if rng.IntN(3) > 0 {
				w[rng.IntN(m)] += int32(1 + rng.IntN(3))
			}
		}
		var expanded []float64
		for _, x := range xs {
			for k := int32(0); k < w[x.run]; k++ {
				expanded = append(expanded, x.v)
			}
		}
		out := make([]float64, len(qs))
		ok := weightedQuantiles(xs, runCounts(xs, m), w, qs, out)
		if ok != (len(expanded) > 0) {
			t.Fatalf("trial %d: ok %v with %d expanded values", trial, ok, len(expanded))
		}
		if !ok {
			continue
		}
		for k, q := range qs {
			if want := quantile7(expanded, q); out[k] != want {
				t.Fatalf("trial %d: q%g = %v, want %v (xs %v, w %v)", trial, q, out[k], want, xs, w)
			}
		}
	}
}
