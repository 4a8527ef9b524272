package stats

import (
	"math"
	"slices"
)

// PairTieMS is the paired difference below which (in absolute value) a
// run is a tie: a browser's timings are rounded, and half a millisecond is
// below what a user or a network could tell apart.
const PairTieMS = 0.5

// Histogram is a binned distribution: Counts[i] values fell in
// [Edges[i], Edges[i+1]).
type Histogram struct {
	Edges  []float64
	Counts []int
}

// NewHistogram bins values into about 20 bins of a "nice" width (NiceStep)
// covering their 1st–99th percentile; the outer bins also hold the tails.
// The edges are start + i·width, not rounded.
func NewHistogram(values []float64) Histogram {
	if len(values) == 0 {
		return Histogram{Edges: []float64{}, Counts: []int{}}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	lo, hi := Quantile(s, 0.01), Quantile(s, 0.99)
	if hi <= lo {
		lo, hi = lo-1, hi+1
	}
	width := NiceStep((hi - lo) / 20)
	start := math.Floor(lo/width) * width
	n := int(math.Ceil((hi-start)/width)) + 1
	n = min(max(n, 1), 60)
	edges := make([]float64, n+1)
	for i := range edges {
		edges[i] = start + float64(i)*width
	}
	counts := make([]int, n)
	for _, d := range s {
		i := int(math.Floor((d - start) / width))
		counts[min(max(i, 0), n-1)]++
	}
	return Histogram{Edges: edges, Counts: counts}
}

// NiceStep rounds a step up to 1, 2 or 5 times a power of ten; 1 for a
// step that is not positive and finite.
func NiceStep(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}
