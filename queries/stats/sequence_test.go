package stats

import (
	"flag"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

var sequenceSets = flag.Int("sequence-sets", 0, "data sets per case in TestSequenceBySimulation (0: 1000, 150 under -short)")

// TestSequenceMultiplier: the sequence is wider than one look's interval
// at every n, least near the runs it is tuned for; the price is printed.
func TestSequenceMultiplier(t *testing.T) {
	var s Sequence
	z, _ := Z()
	for _, n := range []int{1, 10, 100, 1000, 3000, 10000, 30000, 100000, 1000000} {
		if m := s.Multiplier(n); !(m > z) {
			t.Errorf("Multiplier(%d) = %.3f, not above z = %.3f", n, m, z)
		}
	}
	if a, b, c := s.Multiplier(1000), s.Multiplier(DefaultSequenceRuns), s.Multiplier(100000); !(b < a && b < c) {
		t.Errorf("multipliers %.3f, %.3f, %.3f at 1000, %d and 100000 runs: not least at the tuning", a, b, c, DefaultSequenceRuns)
	}
	for _, n := range []int{1000, 10000} {
		t.Logf("at %d runs: multiplier %.3f, %.2f× one look's %.3f", n, s.Multiplier(n), s.Multiplier(n)/z, z)
	}
	if !math.IsNaN(s.Multiplier(0)) {
		t.Error("Multiplier(0) is a number")
	}
}

func TestDecideSequence(t *testing.T) {
	for _, c := range []struct {
		lo, hi, effect float64
		want           SequenceDecision
	}{
		{-5, -1, 10, SeqFaster}, {1, 5, 10, SeqSlower}, {-3, 4, 10, NoneOfInterest},
		{-12, 4, 10, KeepGoing}, {-3, 4, 0, KeepGoing}, {-10, 0, 10, KeepGoing},
	} {
		if got := DecideSequence(c.lo, c.hi, c.effect); got != c.want {
			t.Errorf("DecideSequence(%g, %g, %g) = %d, want %d", c.lo, c.hi, c.effect, got, c.want)
		}
	}
}

func TestRunsToDecide(t *testing.T) {
	var s Sequence
	_, zp := Z()
	n, ok := s.RunsToDecide(3, 1000, 10)
	if !ok || n <= 1000 {
		t.Fatalf("RunsToDecide(3, 1000, 10) = %d, %v", n, ok)
	}
	at := func(n int) float64 { return (s.Multiplier(n) + zp) * 3 * math.Sqrt(1000/float64(n)) }
	if !(at(n) < 10 && at(n-1) >= 10) {
		t.Errorf("%d runs: MDE %.3f there, %.3f one run before; want the first under 10", n, at(n), at(n-1))
	}
	if n, ok := s.RunsToDecide(2, 1000, 100); !ok || n != 1000 {
		t.Errorf("an effect the runs at hand decide: %d, %v", n, ok)
	}
	for _, c := range [][3]float64{{2, 0, 10}, {2, 1000, 0}, {0, 1000, 10}, {2, 1000, 1e-9}} {
		if n, ok := s.RunsToDecide(c[0], int(c[1]), c[2]); ok {
			t.Errorf("RunsToDecide(%v) = %d, want none", c, n)
		}
	}
}

// ranks is a Fenwick tree of counts over bins of width binMS: the sorted
// samples' order statistics in O(log bins) as samples arrive.
type ranks struct {
	tree []int32
	n    int
}

const (
	binMS = 0.1
	bins  = 1 << 15 // 0 to 3 276.8 ms
)

func newRanks() *ranks { return &ranks{tree: make([]int32, bins+1)} }

func (r *ranks) add(ms float64) {
	i := min(int(ms/binMS), bins-1) + 1
	for ; i <= bins; i += i & -i {
		r.tree[i]++
	}
	r.n++
}

// at is the value of the k-th smallest sample (1-based), at its bin's
// middle.
func (r *ranks) at(k int) float64 {
	k = max(1, min(k, r.n))
	pos := 0
	for step := bins; step > 0; step >>= 1 {
		if next := pos + step; next <= bins && int(r.tree[next]) < k {
			pos = next
			k -= int(r.tree[next])
		}
	}
	return (float64(pos) + 0.5) * binMS
}

// quantile is the p-quantile of the samples so far and its standard
// error from the order statistics a standard deviation of the rank away
// (distribution-free: the rank of the quantile is binomial).
func (r *ranks) quantile(p float64) (q, se float64) {
	k := p * float64(r.n)
	d := math.Sqrt(float64(r.n) * p * (1 - p))
	return r.at(int(math.Ceil(k))), (r.at(int(math.Ceil(k+d))) - r.at(int(math.Floor(k-d)))) / 2
}

// look is one rule's interval of H3 − H2 at n runs around est with
// standard error se.
type look func(est, se float64, n int) (lo, hi float64)

// TestSequenceBySimulation reads experiments as an operator watching the
// dashboard would: H3 − H2 at p95 over runs (one request per protocol
// each, a skewed duration), an interval every 100 runs up to 20 000.
//   - null effect: the sequence declares faster or slower at some look in
//     at most 5 % of the data sets; four broken rules — one look's 95 %
//     interval at every look (the report's relative windows), a 99 % one,
//     the sequence over one protocol's standard error instead of the
//     difference's, and a sequence at α = 0.2 — declare more;
//   - planted effects of 1×, 2× and 4× one look's MDE at 20 000 runs: the
//     share decided within 20 000 runs and the median runs to a decision
//     are printed, and the 4× effect is decided in nearly every set.
func TestSequenceBySimulation(t *testing.T) {
	sets := *sequenceSets
	if sets == 0 {
		sets = 1000
		if testing.Short() || raceEnabled() {
			sets = 150
		}
	}
	const (
		maxRuns = 20000
		every   = 100
		p       = 0.95
	)
	var seq Sequence
	z, zp := Z()
	rules := []struct {
		name   string
		look   look
		broken bool
	}{
		{"sequence", seq.Interval, false},
		{"one look's 95 % interval at every look", func(e, se float64, _ int) (float64, float64) { return e - z*se, e + z*se }, true},
		{"one look's 99 % interval at every look", func(e, se float64, _ int) (float64, float64) { return e - 2.5758*se, e + 2.5758*se }, true},
		{"the sequence with one protocol's standard error", func(e, se float64, n int) (float64, float64) { return seq.Interval(e, se/math.Sqrt2, n) }, true},
		{"a sequence at α = 0.2", Sequence{Alpha: 0.2}.Interval, true},
	}
	// A skewed duration: 40 ms plus a log-normal part, so that p95 sits in
	// a thin tail as real request durations' does.
	duration := func(rng *rand.Rand, shift float64) float64 {
		return 40 + 30*math.Exp(0.6*rng.NormFloat64()) + shift
	}
	// One look's standard error of the difference at maxRuns, from a pilot
	// set, sets the planted effects' scale.
	pilot := [2]*ranks{newRanks(), newRanks()}
	prng := rand.New(rand.NewPCG(1, 2))
	for range maxRuns {
		pilot[0].add(duration(prng, 0))
		pilot[1].add(duration(prng, 0))
	}
	_, se0 := pilot[0].quantile(p)
	_, se1 := pilot[1].quantile(p)
	mde := (z + zp) * math.Hypot(se0, se1)
	t.Logf("one look's MDE at p95 and %d runs: %.2f ms", maxRuns, mde)

	run := func(shift float64, seed uint64, decided func(rule int, runs int)) {
		rng := rand.New(rand.NewPCG(seed, 0x5e9))
		h2, h3 := newRanks(), newRanks()
		done := make([]bool, len(rules))
		for n := 1; n <= maxRuns; n++ {
			h2.add(duration(rng, 0))
			h3.add(duration(rng, shift))
			if n%every != 0 {
				continue
			}
			q2, s2 := h2.quantile(p)
			q3, s3 := h3.quantile(p)
			est, se := q3-q2, math.Hypot(s2, s3)
			for i, r := range rules {
				if done[i] {
					continue
				}
				if lo, hi := r.look(est, se, n); hi < 0 || lo > 0 {
					done[i] = true
					decided(i, n)
				}
			}
		}
	}

	declared := make([]int, len(rules))
	for set := range sets {
		run(0, uint64(set), func(rule, _ int) { declared[rule]++ })
	}
	for i, r := range rules {
		rate := float64(declared[i]) / float64(sets)
		t.Logf("null effect, %s: declared at some look in %.1f %% of %d sets", r.name, 100*rate, sets)
		switch {
		case !r.broken && rate > 0.05:
			t.Errorf("the sequence declared a null effect in %.1f %% of sets, more than 5 %%", 100*rate)
		case r.broken && rate <= 0.05:
			t.Errorf("the broken rule %q declared a null effect in only %.1f %% of sets: the simulation cannot tell it apart", r.name, 100*rate)
		}
	}
	for _, k := range []float64{1, 2, 4} {
		var at []int
		for set := range sets {
			run(-k*mde, uint64(1e6+set), func(rule, runs int) {
				if rule == 0 {
					at = append(at, runs)
				}
			})
		}
		share := float64(len(at)) / float64(sets)
		median := math.NaN()
		if len(at) > 0 {
			slices.Sort(at)
			median = float64(at[len(at)/2])
		}
		t.Logf("planted effect %g× one look's MDE (%.2f ms): decided within %d runs in %.1f %% of sets, median %.0f runs", k, k*mde, maxRuns, 100*share, median)
		if k == 4 && share < 0.95 {
			t.Errorf("a planted effect of 4× the MDE decided in only %.1f %% of sets", 100*share)
		}
	}
}
