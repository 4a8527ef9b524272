package stats

import (
	"math"
	"testing"
)

// On a linear curve the rank interval's bounds are the levels' values, so
// the estimate and its standard error are known in closed form; a bound
// beyond the grid has no estimate.
func TestRankEstimate(t *testing.T) {
	grid := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	curve := make([]float64, len(grid))
	for i, q := range grid {
		curve[i] = 100 * q
	}
	est, se, ok := RankEstimate(grid, curve, 0.5, 100)
	if !ok || math.Abs(est-50) > 1e-9 || math.Abs(se-5) > 1e-9 {
		t.Errorf("median of 100 runs: %g ± %g (%v), want 50 ± 5", est, se, ok)
	}
	if _, _, ok := RankEstimate(grid, curve, 0.9, 100); ok {
		t.Error("p90 of 100 runs: its upper bound is beyond the grid, want no estimate")
	}
}
