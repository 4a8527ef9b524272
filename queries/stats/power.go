package stats

import "math"

// The power rule turns a difference at one percentile and its bootstrap
// interval into a decision, and says what the runs at hand can and cannot
// tell apart.
//
// Decision: the difference is declared when its Level interval (the
// cluster bootstrap's) excludes zero (Decide).
//
// Minimum detectable effect: the bootstrap's spread gives a standard error,
// SE = (interval width) / (2 z₀.₉₇₅), and MDE = (z₀.₉₇₅ + z₀.₈₀) SE ≈ 2.80 SE is
// the true difference that an interval of that width excludes zero for in
// 80 % of data sets. A percentile's standard error shrinks as 1/√runs, so
// with m runs instead of n the MDE is MDE·√(n/m) (MDEAt), and an effect E
// needs n·(MDE/E)² runs (RunsToDetect). TestPowerRuleBySimulation checks
// both rates.

// The rule's levels: the bootstrap intervals' confidence, and the power
// at which an effect counts as detectable.
const (
	Level = 0.95
	Power = 0.80
)

// maxRunsToDetect bounds RunsToDetect: 2^53, the largest count a float64
// holds exactly, far beyond any site's runs.
const maxRunsToDetect = 1 << 53

// zLevel and zPower are the standard normal quantiles of the rule:
// z₀.₉₇₅ ≈ 1.960 (a two-sided 95 % interval) and z₀.₈₀ ≈ 0.842 (80 % power).
var (
	zLevel = normalQuantile(1 - (1-Level)/2)
	zPower = normalQuantile(Power)
)

func normalQuantile(q float64) float64 { return math.Sqrt2 * math.Erfinv(2*q-1) }

// Z returns the rule's standard normal quantiles, for stating it: z₀.₉₇₅
// of the interval and z₀.₈₀ of the power.
func Z() (level, power float64) { return zLevel, zPower }

// SE is the standard error that a Level interval [lo, hi] implies.
func SE(lo, hi float64) float64 { return (hi - lo) / (2 * zLevel) }

// Margin is the half width of a Level interval with standard error se.
func Margin(se float64) float64 { return zLevel * se }

// MDE is the minimum detectable effect at Power of a difference with
// standard error se.
func MDE(se float64) float64 { return (zLevel + zPower) * se }

// MDEAt is the minimum detectable effect that at runs would give where
// runs give mde: the MDE scales as 1/√runs. ok is false without runs.
func MDEAt(mde float64, runs, at int) (float64, bool) {
	if runs <= 0 || at <= 0 {
		return 0, false
	}
	return mde * math.Sqrt(float64(runs)/float64(at)), true
}

// RunsToDetect is how many runs in all would detect a difference of
// effect (either sign) with Power, where runs give mde: runs·(mde/effect)².
// ok is false without runs, for an effect that is not positive, or for one
// so small against the MDE that the count would pass 2^53.
func RunsToDetect(mde float64, runs int, effect float64) (n int, ok bool) {
	effect = math.Abs(effect)
	if runs <= 0 || !(effect > 0) || math.IsInf(effect, 0) {
		return 0, false
	}
	f := float64(runs) * math.Pow(mde/effect, 2)
	if !(f < maxRunsToDetect) {
		return 0, false // no count of runs is advice; and int(f) would be undefined
	}
	return int(math.Ceil(f - 1e-9)), true
}

// Decision is what an interval of H3 − H2 says.
type Decision int

// Decisions of the power rule.
const (
	NoDifference Decision = iota // the interval holds zero
	Faster                       // the interval lies below zero: HTTP/3 faster
	Slower                       // the interval lies above zero
)

// Decide is the decision of the Level interval [lo, hi] of H3 − H2.
func Decide(lo, hi float64) Decision {
	switch {
	case hi < 0:
		return Faster
	case lo > 0:
		return Slower
	}
	return NoDifference
}
