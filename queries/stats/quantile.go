package stats

import "math"

// Percentiles are the percentiles every estimate is made at, in percent:
// the report's one list. The bootstrap lays out its per-run sums for
// exactly this many (a checkpoint each), so the list is the package's
// rather than an argument.
var Percentiles = [...]float64{50, 75, 90, 95, 99}

// Quantile is the linear-interpolation quantile of sorted (Hyndman and
// Fan's type 7, numpy's default), q in [0, 1]; NaN when sorted is empty.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * q
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// obs is one observation and the index of the run it belongs to.
type obs struct {
	v   float64
	run int32
}

// weightedQuantiles computes type-7 quantiles of the data set in which
// each observation of xs (sorted by v) appears w[run] times: one bootstrap
// replicate without materialising it. n is the replicate's size
// (replicateSize: a sum over runs, not over observations). qs must be
// ascending. The walk to qs[k] starts at starts[k], a point of xs whose
// weight below is known (a checkpoint), and goes up or down from there;
// with starts nil, the walks to quantiles up to the median start at the
// bottom, the others at the top. It returns false when the replicate has
// no observation.
func weightedQuantiles(xs []obs, n int64, w []int32, qs []float64, out []float64, starts []walkStart) bool {
	if n == 0 {
		return false
	}
	if starts != nil {
		for k, q := range qs {
			lo, frac := position(n, q)
			i, cum := starts[k].at, starts[k].cum // xs[i] covers expanded positions [cum, cum+w)
			for cum > lo {
				i--
				cum -= int64(w[xs[i].run])
			}
			for cum+int64(w[xs[i].run]) <= lo {
				cum += int64(w[xs[i].run])
				i++
			}
			out[k] = interpolate(xs, w, i, frac, lo+1 >= cum+int64(w[xs[i].run]))
		}
		return true
	}
	// Quantiles up to the median are found walking up from the smallest
	// observation, the others walking down from the largest, so the tail
	// percentiles cost a short walk instead of a whole pass.
	i, cum := 0, int64(0) // xs[i] covers expanded positions [cum, cum+w)
	k := 0
	for ; k < len(qs) && qs[k] <= 0.5; k++ {
		lo, frac := position(n, qs[k])
		for cum+int64(w[xs[i].run]) <= lo {
			cum += int64(w[xs[i].run])
			i++
		}
		out[k] = interpolate(xs, w, i, frac, lo+1 >= cum+int64(w[xs[i].run]))
	}
	j, top := len(xs)-1, n // xs[j] covers expanded positions [top-w, top)
	for h := len(qs) - 1; h >= k; h-- {
		lo, frac := position(n, qs[h])
		for top-int64(w[xs[j].run]) > lo {
			top -= int64(w[xs[j].run])
			j--
		}
		out[h] = interpolate(xs, w, j, frac, lo+1 >= top)
	}
	return true
}

// position is the 0-based expanded position of quantile q among n values
// and the fraction towards the next one (type 7).
func position(n int64, q float64) (lo int64, frac float64) {
	h := float64(n-1) * q
	lo = int64(math.Floor(h))
	return lo, h - float64(lo)
}

// interpolate returns the value at position lo+frac, where xs[i] holds
// position lo and next says position lo+1 lies in a later observation
// (the next one with a non-zero weight).
func interpolate(xs []obs, w []int32, i int, frac float64, next bool) float64 {
	a := xs[i].v
	if frac == 0 || !next {
		return a
	}
	for j := i + 1; j < len(xs); j++ {
		if w[xs[j].run] > 0 {
			return a + frac*(xs[j].v-a)
		}
	}
	return a
}
