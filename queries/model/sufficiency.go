package model

import (
	"fmt"
	"math"
	"strings"

	"github.com/h3rum/h3rum/queries/stats"
)

// Round3 rounds to 0.001 (a microsecond, or a thousandth of a percent).
func Round3(v float64) float64 { return math.Round(v*1000)/1000 + 0 } // + 0 turns -0 into 0

// Ptr points to v rounded by Round3: an optional figure of the report.
func Ptr(v float64) *float64 {
	v = Round3(v)
	return &v
}

// MinTailRuns is K of the sufficiency rule (stats.MinTailRuns): an
// interval at percentile p needs runs × (1 − p/100) ≥ K.
const MinTailRuns = stats.MinTailRuns

// ExactBelowSamples is the size under which an outcome's percentiles are
// exact (stats.ExactBelowSamples) when its group's runs were all fetched
// (not thinned to MaxRunsPerGroup) and they hold all of its samples.
const ExactBelowSamples = stats.ExactBelowSamples

// sufficient reports whether runs are enough for an interval at p.
func sufficient(runs int, p float64) bool { return stats.Sufficient(runs, p) }

// minRunCap is the smallest MaxRunsPerGroup that can show every percentile:
// what the highest one needs. A lower cap would hide p99 in exactly the
// groups with the most data.
func minRunCap() int { return stats.RunsNeeded(percentiles[len(percentiles)-1]) }

// SufficiencyText states the rule and what each percentile needs.
func SufficiencyText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runs × (1 − p) ≥ %d:", MinTailRuns)
	for i, p := range percentiles {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " p%g %d runs", p, stats.RunsNeeded(p))
	}
	return b.String()
}

// MarkSufficiency flags the percentiles that runs are too few for and
// drops their intervals.
func (s *Stats) MarkSufficiency(runs int) {
	for i := range s.Percentiles {
		p := &s.Percentiles[i]
		p.Insufficient = !sufficient(runs, p.P)
		if p.Insufficient {
			p.CILowMS, p.CIHighMS = nil, nil
		}
	}
}

// Settle completes the outcomes of g from its fetched runs, before any
// interval is computed: exact percentiles (stats.Exact, order-balanced)
// where ExactBelowSamples allows, and the sufficiency of H2 and H3 judged
// on the runs their intervals are computed from (exactly counted; the
// group's runs unless it was thinned). The fallback and other outcomes
// have no intervals and keep the flags their reported runs gave them.
func Settle(g *Group, runs []stats.Run) {
	for _, o := range []struct {
		s    *Stats
		kind stats.Kind
		ci   bool
	}{
		{g.H2, stats.KindH2, true},
		{g.H3, stats.KindH3, true},
		{g.WantedH3GotH2, stats.KindFallback, false},
		{g.Other, stats.KindOther, false},
	} {
		if o.s == nil {
			continue
		}
		n, total := 0, 0
		for i := range runs {
			if v := runs[i].Samples(o.kind); len(v) > 0 {
				n, total = n+1, total+len(v)
			}
		}
		// A count that differs from the point query's means the two
		// selections disagree: then the t-digest of the full selection
		// stays.
		if !g.Sampled && total == o.s.Samples && total < ExactBelowSamples {
			ps := make([]float64, len(o.s.Percentiles))
			for i, p := range o.s.Percentiles {
				ps[i] = p.P
			}
			if qs, ok := stats.Exact(runs, o.kind, ps); ok {
				for i := range o.s.Percentiles {
					o.s.Percentiles[i].MS = Round3(qs[i])
				}
			}
			o.s.Exact = true
		}
		o.s.fetchedRuns = n
		if o.ci {
			o.s.MarkSufficiency(n)
		}
	}
}
