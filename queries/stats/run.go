package stats

import (
	"cmp"
	"slices"
)

// Kind is what a sample's outcome is to the statistics.
type Kind uint8

// Kinds of samples, by the origin a request was sent to and the protocol
// it used.
const (
	KindH2       Kind = iota // sent to the H2 origin, used h2
	KindH3                   // sent to the H3 origin, used h3
	KindFallback             // sent to the H3 origin, used h2 or h1
	KindOther                // anything else
)

// Run is one run's selected samples, in ms, split by kind. Every slice is
// sorted, so that results do not depend on the order the samples came in.
type Run struct {
	H2, H3          []float64 // every sample of KindH2 and of KindH3
	Fallback, Other []float64 // KindFallback's and KindOther's, for exact percentiles
	H2Par, H3Par    []float64 // KindH2's and KindH3's in parallel batches, for the paired view
	FallbackPar     int       // KindFallback's in parallel batches
	H3First         bool      // the H3 batch started first (param_order)
}

// SplitRun splits a run's samples: durations d, outcome codes oc that kind
// maps to a Kind, and parallel flags par (1 for a parallel batch's
// request). It leaves H3First false.
func SplitRun(d []float32, oc, par []uint8, kind func(outcome uint8) Kind) Run {
	n := min(len(d), len(oc), len(par))
	// The run's slices share one allocation: count, then fill.
	var cnt [6]int // H2, H3, Fallback, Other, H2Par, H3Par
	for i := range n {
		k := kind(oc[i])
		cnt[k]++
		if par[i] == 1 && k < 2 {
			cnt[4+k]++
		}
	}
	buf := make([]float64, cnt[0]+cnt[1]+cnt[2]+cnt[3]+cnt[4]+cnt[5])
	var r Run
	all := [6]*[]float64{&r.H2, &r.H3, &r.Fallback, &r.Other, &r.H2Par, &r.H3Par}
	for k, s := range all {
		if cnt[k] > 0 {
			*s, buf = buf[:0:cnt[k]], buf[cnt[k]:]
		}
	}
	for i := range n {
		x, k, p := float64(d[i]), kind(oc[i]), par[i] == 1
		*all[k] = append(*all[k], x)
		switch {
		case k < 2 && p:
			*all[4+k] = append(*all[4+k], x)
		case k == KindFallback && p:
			r.FallbackPar++
		}
	}
	for _, s := range all {
		slices.Sort(*s)
	}
	return r
}

// Samples are r's samples of kind k.
func (r *Run) Samples(k Kind) []float64 {
	switch k {
	case KindH2:
		return r.H2
	case KindH3:
		return r.H3
	case KindFallback:
		return r.Fallback
	}
	return r.Other
}

// CompareRuns orders runs by their samples, batch order aside: sorted so,
// a group's runs give the same bootstrap whatever order they came in.
func CompareRuns(a, b Run) int {
	return cmp.Or(
		slices.Compare(a.H2, b.H2),
		slices.Compare(a.H3, b.H3),
		slices.Compare(a.Fallback, b.Fallback),
		slices.Compare(a.Other, b.Other),
		slices.Compare(a.H2Par, b.H2Par),
		slices.Compare(a.H3Par, b.H3Par),
		cmp.Compare(a.FallbackPar, b.FallbackPar),
	)
}

// PairedEligible reports whether a run enters the paired view: both
// parallel batches present and its H3 batch used h3 throughout.
func (r *Run) PairedEligible() bool {
	return len(r.H2Par) > 0 && len(r.H3Par) > 0 && r.FallbackPar == 0
}
