package stats

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
)

// replicates is the report's default (queries.DefaultReplicates), with
// which the simulations compute their intervals.
const replicates = 1000

func TestRunsNeeded(t *testing.T) {
	want := map[float64]int{50: 30, 75: 60, 90: 150, 95: 300, 99: 1500}
	for _, p := range Percentiles {
		n, ok := want[p]
		if !ok {
			t.Fatalf("p%g has no expectation: add it", p)
		}
		if got := RunsNeeded(p); got != n || Sufficient(n-1, p) || !Sufficient(n, p) {
			t.Errorf("p%g needs %d runs (sufficient at %d: %v, at %d: %v), want %d", p, got, n-1, Sufficient(n-1, p), n, Sufficient(n, p), n)
		}
	}
}

// Exact is the order-balanced exact type-7 quantile: the mean of each
// batch order's, or the one order's.
func TestExactBalancesOrders(t *testing.T) {
	runs := []Run{
		{H2: []float64{1, 2, 3}},
		{H2: []float64{10, 30}, H3First: true},
		{H3: []float64{5}},
	}
	got, ok := Exact(runs, KindH2, []float64{0, 50, 100})
	if want := []float64{(1 + 10) / 2.0, (2 + 20) / 2.0, (3 + 30) / 2.0}; !ok || !slices.Equal(got, want) {
		t.Errorf("H2: %v %v, want %v", got, ok, want)
	}
	if got, ok := Exact(runs, KindH3, []float64{50}); !ok || got[0] != 5 {
		t.Errorf("H3, one order: %v %v, want 5", got, ok)
	}
	if _, ok := Exact(runs, KindFallback, []float64{50}); ok {
		t.Error("no fallback samples, yet a quantile")
	}
}

// The bootstrap stops when its context ends: a report whose client left
// does not compute on.
func TestBootstrapStopsWhenCanceled(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cm := coverageModel{PerRun: 5, RunSD: 0.35, MedianH2: 50, SDH2: 0.30, MedianH3: 48, SDH3: 0.25}
	runs := cm.draw(rng, 200)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if iv, err := NewBootstrap(runs).Intervals(ctx, Config{Replicates: 10000, Seed: 1}); iv != nil || err != context.Canceled {
		t.Errorf("canceled bootstrap: intervals %v, error %v", iv, err)
	}
	iv, err := NewBootstrap(runs).Intervals(context.Background(), Config{Replicates: 200, Seed: 1})
	if err != nil || iv == nil || !iv.H2[0].OK {
		t.Errorf("bootstrap without cancellation: intervals %v, error %v", iv, err)
	}
}

// coverageSets overrides TestIntervalCoverage's data sets per percentile;
// REPORT.md's table was made with -coverage-sets 8000.
var coverageSets = flag.Int("coverage-sets", 0, "data sets per percentile in TestIntervalCoverage (0: 800, 50 under -race or -short)")

// raceEnabled reports whether the test binary runs under the race
// detector, which makes the bootstrap about 17 times slower.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// coverageModel is the known distribution of TestIntervalCoverage. A run
// sends PerRun requests to each origin; a request's log duration is
// log(median) + u + ε, with a per-run effect u ~ N(0, RunSD²) shared by the
// run's H2 and H3 requests (one visitor, one network) and ε ~ N(0, SD²).
// H2's parameters reproduce the coverage of the bootstrap without
// the rule: 86 % at p95 and 68 % at p99 with 30 runs (issue: 87 %, 67 %).
type coverageModel struct {
	PerRun         int
	RunSD          float64
	MedianH2, SDH2 float64 // the median in ms, the SD of ε
	MedianH3, SDH3 float64
}

// truth is the population quantile q of H2 and H3 (lognormal marginals).
func (c *coverageModel) truth(q float64) (h2, h3 float64) {
	z := math.Sqrt2 * math.Erfinv(2*q-1)
	return c.MedianH2 * math.Exp(z*math.Hypot(c.RunSD, c.SDH2)), c.MedianH3 * math.Exp(z*math.Hypot(c.RunSD, c.SDH3))
}

// draw makes m runs. They carry no parallel batches: the paired view is
// not under test, and without it the bootstrap is faster.
func (c *coverageModel) draw(rng *rand.Rand, m int) []Run {
	runs := make([]Run, m)
	for i := range runs {
		u := c.RunSD * rng.NormFloat64()
		r := &runs[i]
		// A random batch order, as the script's: the estimates weigh the
		// two orders equally (order.go), so coverage is checked for that
		// estimator with the chance imbalance a real group has.
		r.H3First = rng.IntN(2) == 1
		r.H2, r.H3 = make([]float64, c.PerRun), make([]float64, c.PerRun)
		for k := range c.PerRun {
			r.H2[k] = c.MedianH2 * math.Exp(u+c.SDH2*rng.NormFloat64())
			r.H3[k] = c.MedianH3 * math.Exp(u+c.SDH3*rng.NormFloat64())
		}
		slices.Sort(r.H2)
		slices.Sort(r.H3)
	}
	return runs
}

// TestIntervalCoverage checks the sufficiency rule by simulation: for each
// percentile p, data sets of exactly the runs the rule asks for
// (RunsNeeded(p)) are drawn from coverageModel and go through the report's
// statistics — exact percentiles, the rule and the cluster bootstrap with
// the default 1000 replicates — and the share of data sets whose 95 %
// interval holds the true value is counted, for H2, H3 and H3 − H2 at p.
//
// Each coverage must not be significantly below 93 % (by more than 2.5
// standard errors of its data sets) and the means over the percentiles, of
// H2 and H3 and of the differences, must reach 93 %. With 800 data sets one
// coverage is known to about ±1.8 points, so asking each to reach 93 %
// exactly would fail by chance at a true 94 %; the mean of H2 and H3 is
// known to about ±0.6 points. Under -race the bootstrap is 17 times slower,
// so there (and with -short) the test runs 50 data sets per percentile, holds
// the means too only to "not significantly below 93 %" and catches only
// gross regressions; `make test` runs it once more without -race.
// REPORT.md ("Small samples") has the coverages it measures, and those of
// other values of MinTailRuns.
func TestIntervalCoverage(t *testing.T) {
	// The full check: 800 data sets per percentile, the means held to
	// 93 % exactly. Reduced (-short, -race): 50, and the means only to
	// "not significantly below", as single coverages always are.
	const target = 0.93
	sets, meanTol := *coverageSets, 0.0
	if sets == 0 {
		sets = 800
		if testing.Short() || raceEnabled() {
			sets = 50
		}
	}
	if sets < 800 {
		meanTol = 2.5 * math.Sqrt(target*(1-target)/float64(2*len(Percentiles)*sets))
	}
	cm := coverageModel{PerRun: 5, RunSD: 0.35, MedianH2: 50, SDH2: 0.30, MedianH3: 48, SDH3: 0.25}
	qs := Percentiles[:]
	cov2, cov3, covD := make([]int, len(qs)), make([]int, len(qs)), make([]int, len(qs)) // data sets covered
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		first error
	)
	work := make(chan [2]int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range work {
				k, set := job[0], job[1]
				h2, h3, d, err := cm.coverOnce(k, set)
				mu.Lock()
				cov2[k] += h2
				cov3[k] += h3
				covD[k] += d
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	// Largest data sets first, so the workers finish together.
	for k := len(qs) - 1; k >= 0; k-- {
		for set := range sets {
			work <- [2]int{k, set}
		}
	}
	close(work)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}

	tol := 2.5 * math.Sqrt(target*(1-target)/float64(sets))
	var sumHX, sumDiff float64
	for k, p := range qs {
		c2, c3, cd := float64(cov2[k])/float64(sets), float64(cov3[k])/float64(sets), float64(covD[k])/float64(sets)
		t.Logf("p%g at %4d runs (%d data sets): coverage H2 %.1f %%, H3 %.1f %%, H3 − H2 %.1f %%", p, RunsNeeded(p), sets, 100*c2, 100*c3, 100*cd)
		for _, c := range []struct {
			what string
			v    float64
		}{{"H2", c2}, {"H3", c3}, {"H3 − H2", cd}} {
			if c.v < target-tol {
				t.Errorf("p%g %s: coverage %.1f %% at the rule's threshold (%d runs), significantly below %.0f %% (tolerance %.1f points)",
					p, c.what, 100*c.v, RunsNeeded(p), 100*target, 100*tol)
			}
		}
		sumHX += c2 + c3
		sumDiff += cd
	}
	if mean := sumHX / float64(2*len(qs)); mean < target-meanTol {
		t.Errorf("mean coverage of H2 and H3 percentiles at the rule's thresholds %.2f %%, below %.0f %% (tolerance %.1f points)",
			100*mean, 100*target, 100*meanTol)
	}
	if mean := sumDiff / float64(len(qs)); mean < target-meanTol {
		t.Errorf("mean coverage of H3 − H2 at the rule's thresholds %.2f %%, below %.0f %% (tolerance %.1f points)",
			100*mean, 100*target, 100*meanTol)
	}
}

// estimate is a data set as the report computes it: exact percentiles of
// H2 and H3 and the bootstrap's intervals.
type estimate struct {
	h2, h3 []float64 // exact, at Percentiles
	iv     *Intervals
}

func estimateOf(runs []Run, seed uint64) (estimate, error) {
	var e estimate
	var ok2, ok3 bool
	e.h2, ok2 = Exact(runs, KindH2, Percentiles[:])
	e.h3, ok3 = Exact(runs, KindH3, Percentiles[:])
	iv, err := NewBootstrap(runs).Intervals(context.Background(), Config{Replicates: replicates, Seed: seed, Stream: "sim"})
	if !ok2 || !ok3 || iv == nil || err != nil {
		return e, fmt.Errorf("%d runs: exact H2 %v, H3 %v; intervals %v, error %v", len(runs), ok2, ok3, iv != nil, err)
	}
	e.iv = iv
	return e, nil
}

// coverOnce draws data set number set at percentile index k's threshold,
// computes it and reports which intervals hold the truth at k. It also
// checks the rule: k and the lower percentiles are sufficient, the higher
// ones not.
func (c *coverageModel) coverOnce(k, set int) (h2, h3, diff int, err error) {
	p := Percentiles[k]
	m := RunsNeeded(p)
	rng := rand.New(rand.NewPCG(uint64(k+1), uint64(set)))
	runs := c.draw(rng, m)
	e, err := estimateOf(runs, uint64(set)+1)
	if err != nil {
		return 0, 0, 0, err
	}
	for i, q := range Percentiles {
		if Sufficient(m, q) != (i <= k) {
			return 0, 0, 0, fmt.Errorf("%d runs, p%g: sufficient %v", m, q, Sufficient(m, q))
		}
	}
	t2, t3 := c.truth(p / 100)
	in := func(iv Interval, est, v float64) int {
		if lo, hi, ok := iv.Around(est); ok && lo <= v && v <= hi {
			return 1
		}
		return 0
	}
	return in(e.iv.H2[k], e.h2[k], t2), in(e.iv.H3[k], e.h3[k], t3), in(e.iv.Diff[k], e.h3[k]-e.h2[k], t3-t2), nil
}
