package queries

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// MinTailRuns is K of the sufficiency rule: percentile p of an outcome is
// shown with a confidence interval only when runs × (1 − p/100) ≥ K, that
// is, when about K runs lie beyond it; below that its estimate is flagged
// insufficient and its interval is null, and so is the H3 − H2 difference
// at p. The cluster bootstrap's coverage is governed by that tail count,
// whatever p. In simulation (TestIntervalCoverage; REPORT.md, "Small
// samples") K = 15 covered 93.7–94.4 % at every threshold; K = 10 was on
// the edge (93.0 %, and 92.9 % with a stronger per-run effect), K = 5 at
// 91–93 %.
const MinTailRuns = 15

// ExactBelowSamples is the size under which an outcome's percentiles are
// exact type-7 quantiles computed in Go on its fetched samples instead of
// ClickHouse's t-digest — when the group's runs were all fetched (not
// thinned to MaxRunsPerGroup) and the fetched samples are all of its
// samples. At 200 samples the t-digest's p99 was 11 % high; from 10 000 on
// its rank error (REPORT.md, "Accuracy") is at most 0.1 % at p99, and the
// Go side sorts at most this many values per outcome.
const ExactBelowSamples = 10000

// runsNeeded is the fewest runs with which percentile p (in percent) gets
// an interval.
func runsNeeded(p float64) int {
	return int(math.Ceil(MinTailRuns*100/(100-p) - 1e-9))
}

// sufficient reports whether runs are enough for an interval at p.
func sufficient(runs int, p float64) bool { return runs >= runsNeeded(p) }

// minRunCap is the smallest MaxRunsPerGroup that can show every percentile:
// what the highest one needs. A lower cap would hide p99 in exactly the
// groups with the most data.
func minRunCap() int { return runsNeeded(percentiles[len(percentiles)-1]) }

// sufficiencyText states the rule and what each percentile needs.
func sufficiencyText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runs × (1 − p) ≥ %d:", MinTailRuns)
	for i, p := range percentiles {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " p%g %d runs", p, runsNeeded(p))
	}
	return b.String()
}

// markSufficiency flags the percentiles that runs are too few for and
// drops their intervals.
func (s *Stats) markSufficiency(runs int) {
	for i := range s.Percentiles {
		p := &s.Percentiles[i]
		p.Insufficient = !sufficient(runs, p.P)
		if p.Insufficient {
			p.CILowMS, p.CIHighMS = nil, nil
		}
	}
}

// settle completes the outcomes of g from its fetched runs, before any
// interval is computed: exact percentiles (order-balanced, order.go) where
// ExactBelowSamples allows,
// and the sufficiency of H2 and H3 judged on the runs their intervals are
// computed from (exactly counted; the group's runs unless it was thinned).
// The fallback and other outcomes have no intervals and keep the flags
// their reported runs gave them.
func settle(g *Group, runs []runSamples) {
	for _, o := range []struct {
		s    *Stats
		vals func(*runSamples) []float64
		ci   bool
	}{
		{g.H2, func(r *runSamples) []float64 { return r.h2 }, true},
		{g.H3, func(r *runSamples) []float64 { return r.h3 }, true},
		{g.WantedH3GotH2, func(r *runSamples) []float64 { return r.fbDur }, false},
		{g.Other, func(r *runSamples) []float64 { return r.other }, false},
	} {
		if o.s == nil {
			continue
		}
		n, total := 0, 0
		for i := range runs {
			if v := o.vals(&runs[i]); len(v) > 0 {
				n, total = n+1, total+len(v)
			}
		}
		// A count that differs from the point query's means the two
		// selections disagree: then the t-digest of the full selection
		// stays.
		if !g.Sampled && total == o.s.Samples && total < ExactBelowSamples {
			var all [2][]float64 // by batch order
			for i := range runs {
				k := orderH2First
				if runs[i].h3First {
					k = orderH3First
				}
				all[k] = append(all[k], o.vals(&runs[i])...)
			}
			slices.Sort(all[0])
			slices.Sort(all[1])
			exactBalanced(&all, o.s)
			o.s.Exact = true
		}
		o.s.fetchedRuns = n
		if o.ci {
			o.s.markSufficiency(n)
		}
	}
}
