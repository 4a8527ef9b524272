package stats

import "math"

// An experiment's verdict is read again and again as its runs arrive, and
// a one-look interval read at every look declares a null effect far more
// often than its level: the chance that some look excludes zero grows with
// the looks. A confidence sequence holds at every look at once, so an
// experiment may be watched and stopped whenever it decides. Sequence is
// the asymptotic confidence sequence of Waudby-Smith, Arnold, Wu, Wang and
// Ramdas (Annals of Statistics, 2024) with the normal-mixture boundary of
// Howard, Ramdas, McAuliffe and Sekhon (Annals of Statistics, 2021): an
// estimator that is asymptotically normal over independent runs (a
// percentile's difference is) gets estimate ± Multiplier(n)·SE at n runs
// in place of estimate ± z₀.₉₇₅·SE. TestSequenceBySimulation checks the
// rate of null effects ever declared.

// DefaultSequenceRuns is the number of runs a Sequence is tightest at by
// default: the order of runs an experiment of a region gathers in a week.
const DefaultSequenceRuns = 10000

// Sequence is a two-sided confidence sequence's boundary. Its zero value
// holds at 1 − Level and is tightest at DefaultSequenceRuns.
type Sequence struct {
	// Alpha is the chance that the sequence ever misses the true value;
	// 0 means 1 − Level.
	Alpha float64
	// Runs is where the boundary is tightest (the mixture's tuning); 0
	// means DefaultSequenceRuns. The sequence holds at every n whatever
	// Runs is; it is only wider away from it.
	Runs int
}

func (s Sequence) alpha() float64 {
	if s.Alpha > 0 && s.Alpha < 1 {
		return s.Alpha
	}
	return 1 - Level
}

// rho2 is the mixture's variance, chosen so that the boundary is tightest
// at s.Runs (Howard et al. 2021, the normal mixture's optimal tuning).
func (s Sequence) rho2() float64 {
	n := s.Runs
	if n <= 0 {
		n = DefaultSequenceRuns
	}
	l := -2 * math.Log(s.alpha())
	return (l + math.Log(l+1)) / float64(n)
}

// Multiplier is the factor on the standard error at n runs: the sequence's
// interval is estimate ± Multiplier(n)·SE. It is wider than z₀.₉₇₅ at
// every n, least near s.Runs, and grows as √(log n) far beyond it. NaN for
// n < 1.
func (s Sequence) Multiplier(n int) float64 {
	if n < 1 {
		return math.NaN()
	}
	t := float64(n) * s.rho2()
	return math.Sqrt(2 * (t + 1) / t * math.Log(math.Sqrt(t+1)/s.alpha()))
}

// Interval is the sequence's interval at n runs around est with standard
// error se.
func (s Sequence) Interval(est, se float64, n int) (lo, hi float64) {
	h := s.Multiplier(n) * se
	return est - h, est + h
}

// SequenceDecision is what a confidence sequence of H3 − H2 says so far.
type SequenceDecision int

// Decisions of an experiment.
const (
	KeepGoing      SequenceDecision = iota // the interval holds zero and an effect of interest
	SeqFaster                              // the interval lies below zero: HTTP/3 faster
	SeqSlower                              // the interval lies above zero
	NoneOfInterest                         // the interval lies within ± the effect of interest
)

// DecideSequence is the decision of a sequence's interval [lo, hi] for an
// effect of interest effect (ms, positive): decided once the interval
// excludes zero, or excludes both ±effect.
func DecideSequence(lo, hi, effect float64) SequenceDecision {
	switch {
	case hi < 0:
		return SeqFaster
	case lo > 0:
		return SeqSlower
	case effect > 0 && lo > -effect && hi < effect:
		return NoneOfInterest
	}
	return KeepGoing
}

// RunsToDecide is about how many runs in all the sequence needs to decide
// an effect of size effect (either sign) with Power, where runs give
// standard error se: the first n at which (Multiplier(n) + z₀.₈₀)·SE(n) is
// under |effect|, the standard error shrinking as 1/√n — the power rule's
// MDE with the sequence's multiplier in place of z₀.₉₇₅. ok is false
// without runs or effect, or beyond 2^40 runs.
func (s Sequence) RunsToDecide(se float64, runs int, effect float64) (n int, ok bool) {
	effect = math.Abs(effect)
	if runs <= 0 || !(effect > 0) || !(se > 0) || math.IsInf(effect, 0) {
		return 0, false
	}
	mde := func(n int) float64 { return (s.Multiplier(n) + zPower) * se * math.Sqrt(float64(runs)/float64(n)) }
	if mde(runs) < effect {
		return runs, true
	}
	lo, hi := runs, runs
	for mde(hi) >= effect {
		if hi > 1<<40 {
			return 0, false
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 { // the MDE falls as n grows, so bisect
		mid := lo + (hi-lo)/2
		if mde(mid) < effect {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}
