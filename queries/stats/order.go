package stats

import (
	"math"
	"slices"
)

// The script starts one of its two parallel batches first, at random per
// run (param_order): h2first or h3first. That makes the experiment an AB/BA
// crossover, and the statistics use the crossover's estimator: every figure
// of the headline is computed within each batch order and the two are
// averaged, so each order weighs half whatever its share of runs, and an
// order effect (the batch started first finds the path emptier, or pays
// for a wake-up) cancels out of H3 − H2 instead of leaking in through a
// chance imbalance. A group whose runs are all of one order gets that
// order's figures.

// Batch order indices of the per-order arrays.
const (
	H2First = iota
	H3First
)

// orderOf is the index of a run's batch order.
func orderOf(h3First bool) int {
	if h3First {
		return H3First
	}
	return H2First
}

// Balance sets out to the mean of the two orders' values, or to the one
// order's values when only one has any (ok), and reports whether either
// had.
func Balance(v *[2][]float64, ok [2]bool, out []float64) bool {
	switch {
	case ok[0] && ok[1]:
		for i := range out {
			out[i] = (v[0][i] + v[1][i]) / 2
		}
	case ok[0]:
		copy(out, v[0])
	case ok[1]:
		copy(out, v[1])
	default:
		return false
	}
	return true
}

// Exact returns the order-balanced exact type-7 quantiles, at ps (in
// percent), of the runs' samples of kind k; false when no run has one.
func Exact(runs []Run, k Kind, ps []float64) ([]float64, bool) {
	var all [2][]float64 // by batch order
	for i := range runs {
		o := orderOf(runs[i].H3First)
		all[o] = append(all[o], runs[i].Samples(k)...)
	}
	slices.Sort(all[0])
	slices.Sort(all[1])
	qs := make([]float64, len(ps))
	var v [2][]float64
	var ok [2]bool
	for o := range all {
		if len(all[o]) == 0 {
			continue
		}
		ok[o] = true
		v[o] = make([]float64, len(qs))
		for i, p := range ps {
			v[o][i] = Quantile(all[o], p/100)
		}
	}
	return qs, Balance(&v, ok, qs)
}

// orderedObs are one statistic's observations split by batch order, for
// estimates that weigh both orders equally.
type orderedObs struct {
	xs     [2][]obs   // sorted by value, then run
	runs   [2][]int32 // the runs with observations in xs (runCounts)
	cnt    [2][]int32 // and how many each has
	check  [2][]int   // checkpoints (checkAt): indices in xs, one per quantile
	tmp    [2][]float64
	starts []walkStart
}

// walkStart is where a walk to a quantile starts: at index at of xs, the
// weight of the observations below being cum.
type walkStart struct {
	at  int
	cum int64
}

func (o *orderedObs) add(v float64, run int32, h3First bool) {
	k := orderOf(h3First)
	o.xs[k] = append(o.xs[k], obs{v, run})
}

// done sorts the observations by value, then run (byValue), and counts
// them per run, for m runs.
func (o *orderedObs) done(m int, byValue func(a, b obs) int) {
	for k := range o.xs {
		if !sortObsByKey(o.xs[k]) {
			slices.SortFunc(o.xs[k], byValue)
		}
		o.runs[k], o.cnt[k] = runCounts(o.xs[k], m)
	}
}

// sortObsByKey sorts xs by value, then run, as integers: each observation
// becomes one uint64 whose order is theirs, the value's float32 bits made
// sortable above the run, which sorts faster than comparing the structs.
// It returns false, leaving xs as it was, when a value is not a float32
// (durations are; paired differences may not be).
func sortObsByKey(xs []obs) bool {
	keys := make([]uint64, len(xs))
	for i, x := range xs {
		f := float32(x.v)
		if float64(f) != x.v || x.run < 0 {
			return false
		}
		b := math.Float32bits(f)
		switch {
		case f == 0:
			b = 1 << 31 // -0 sorts with 0, as cmp.Compare has them equal
		case b>>31 == 1:
			b = ^b // negative: the larger the magnitude, the smaller
		default:
			b |= 1 << 31
		}
		keys[i] = uint64(b)<<32 | uint64(x.run)
	}
	slices.Sort(keys)
	for i, k := range keys {
		b := uint32(k >> 32)
		if b>>31 == 1 {
			b &^= 1 << 31
		} else {
			b = ^b
		}
		xs[i] = obs{float64(math.Float32frombits(b)), int32(uint32(k))}
	}
	return true
}

// nChecks is how many checkpoints a series has: one per percentile.
const nChecks = len(Percentiles)

// checkAt places each order's checkpoints, one per quantile of qs
// (nChecks of them), at the index where the quantile lies when every run
// weighs one. A replicate's walk to a quantile starts at its checkpoint,
// the weight below which is summed as runs are drawn (countBelow), and
// goes up or down: about one standard error of the quantile's share, where
// a walk from the bottom or the top covers up to half the observations.
func (o *orderedObs) checkAt(qs []float64) {
	for k, xs := range o.xs {
		if len(xs) == 0 {
			continue
		}
		o.check[k] = make([]int, len(qs))
		for j, q := range qs {
			o.check[k][j] = min(int(q*float64(len(xs))), len(xs)-1)
		}
	}
}

// countBelow adds, for each observation below a checkpoint, one to that
// checkpoint's count of its run (below(run)[j]).
func (o *orderedObs) countBelow(below func(run int32) *[nChecks]int32) {
	for k, xs := range o.xs {
		at := o.check[k]
		j := 0
		for i, x := range xs {
			for j < len(at) && at[j] <= i {
				j++
			}
			if j == len(at) {
				break
			}
			b := below(x.run)
			for c := j; c < len(at); c++ {
				b[c]++
			}
		}
	}
}

// orderSizes are how many observations of a series a replicate holds,
// per batch order.
type orderSizes [2]int64

// sizes counts o's observations in the replicate with run weights w.
func (o *orderedObs) sizes(w []int32) orderSizes {
	return orderSizes{replicateSize(o.runs[0], o.cnt[0], w), replicateSize(o.runs[1], o.cnt[1], w)}
}

// quantiles computes the order-balanced type-7 quantiles qs of the
// replicate with run weights w, which holds n of o's observations, into
// out; false when no run weighs. below, if not nil, is the replicate's
// weight below each checkpoint (checkAt, for these qs), per order: the
// walks start there; else at the bottom and the top.
func (o *orderedObs) quantiles(w []int32, n orderSizes, below *[nChecks]orderSizes, qs []float64, out []float64) bool {
	var ok [2]bool
	for k := range o.xs {
		if len(o.tmp[k]) != len(qs) {
			o.tmp[k] = make([]float64, len(qs))
		}
		var starts []walkStart
		if below != nil && len(o.check[k]) == len(qs) {
			starts = o.starts[:0]
			for j, at := range o.check[k] {
				starts = append(starts, walkStart{at, below[j][k]})
			}
			o.starts = starts
		}
		ok[k] = weightedQuantiles(o.xs[k], n[k], w, qs, o.tmp[k], starts)
	}
	return Balance(&o.tmp, ok, out)
}

// balancedShare is the order-balanced share hit / n (in each order, the
// observations for which something holds among those of a series); false
// when neither order has any.
func balancedShare(hit, n orderSizes) (float64, bool) {
	var s [2]float64
	var ok [2]bool
	for k := range n {
		if n[k] > 0 {
			s[k], ok[k] = float64(hit[k])/float64(n[k]), true
		}
	}
	switch {
	case ok[0] && ok[1]:
		return (s[0] + s[1]) / 2, true
	case ok[0]:
		return s[0], true
	case ok[1]:
		return s[1], true
	}
	return 0, false
}
