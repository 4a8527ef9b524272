package stats

import (
	"math"
	"slices"
)

// RankEstimate reads the quantile q off curve, its values at the levels
// grid (ascending fractions), and its standard error from the rank
// interval: with n runs as the sample size, the quantile's level has
// standard error √(q(1 − q)/n), and the values at q ± z·that bound it. A
// run's requests count as one observation, which overstates the error (a
// run of m correlated requests tells at least as much as one), so the
// interval is conservative. ok is false when a bound falls outside the
// grid.
func RankEstimate(grid, curve []float64, q float64, n int) (est, se float64, ok bool) {
	const z = 1.959963984540054
	h := z * math.Sqrt(q*(1-q)/float64(n))
	lo, ok1 := atLevel(grid, curve, q-h)
	hi, ok2 := atLevel(grid, curve, q+h)
	est, ok3 := atLevel(grid, curve, q)
	if !ok1 || !ok2 || !ok3 {
		return 0, 0, false
	}
	return est, (hi - lo) / (2 * z), true
}

// atLevel interpolates curve (values at grid) linearly at q.
func atLevel(grid, curve []float64, q float64) (float64, bool) {
	l := grid
	if q < l[0]-1e-9 || q > l[len(l)-1]+1e-9 {
		return 0, false
	}
	i, _ := slices.BinarySearch(l, q)
	switch {
	case i == 0:
		return curve[0], true
	case i >= len(l):
		return curve[len(l)-1], true
	}
	f := (q - l[i-1]) / (l[i] - l[i-1])
	return curve[i-1] + f*(curve[i]-curve[i-1]), true
}
