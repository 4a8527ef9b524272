package stats

import "math"

// MinTailRuns is K of the sufficiency rule: percentile p of an outcome
// gets a confidence interval only when runs × (1 − p/100) ≥ K, that is,
// when about K runs lie beyond it; below that its estimate is
// insufficient, and so is the H3 − H2 difference at p. The cluster
// bootstrap's coverage is governed by that tail count, whatever p;
// TestIntervalCoverage holds K to 93 % coverage at every threshold
// (REPORT.md, "Small samples").
const MinTailRuns = 15

// ExactBelowSamples is the size under which an outcome's percentiles are
// exact type-7 quantiles (Exact) of its fetched samples instead of
// ClickHouse's t-digest, when those are all of its samples: in small
// samples the t-digest's tail is far from the exact value, from this size
// on its rank error is small, and the exact path sorts at most this many
// values per outcome (REPORT.md, "Small samples").
const ExactBelowSamples = 10000

// RunsNeeded is the fewest runs with which percentile p (in percent) gets
// an interval.
func RunsNeeded(p float64) int {
	return int(math.Ceil(MinTailRuns*100/(100-p) - 1e-9))
}

// Sufficient reports whether runs are enough for an interval at p.
func Sufficient(runs int, p float64) bool { return runs >= RunsNeeded(p) }
