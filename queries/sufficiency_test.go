package queries

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestRunsNeeded(t *testing.T) {
	want := map[float64]int{50: 30, 75: 60, 90: 150, 95: 300, 99: 1500}
	for _, p := range percentiles {
		n, ok := want[p]
		if !ok {
			t.Fatalf("p%g has no expectation: add it", p)
		}
		if got := runsNeeded(p); got != n || sufficient(n-1, p) || !sufficient(n, p) {
			t.Errorf("p%g needs %d runs (sufficient at %d: %v, at %d: %v), want %d", p, got, n-1, sufficient(n-1, p), n, sufficient(n, p), n)
		}
	}
	// The run cap holds what p99 needs twice over (Options.MaxRunsPerGroup
	// says why); a cap below p99's need is refused.
	if minRunCap() != 1500 || DefaultMaxRunsPerGroup != 2*minRunCap() {
		t.Errorf("cap: minimum %d, default %d; want 1500 and twice that", minRunCap(), DefaultMaxRunsPerGroup)
	}
	for _, tc := range []struct {
		cap int
		ok  bool
	}{{minRunCap() - 1, false}, {2, false}, {minRunCap(), true}, {0, true}} {
		o := Options{MaxRunsPerGroup: tc.cap}
		err := o.Validate()
		if (err == nil) != tc.ok || (err != nil && (!errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "p99 1500 runs"))) {
			t.Errorf("MaxRunsPerGroup %d: err = %v, want ok %v", tc.cap, err, tc.ok)
		}
	}
}

// smallGroup is a group of runs with n samples of each protocol per run,
// its point estimates (ms) set to a stand-in for ClickHouse's t-digest.
func smallGroup(rng *rand.Rand, runs, n int, tdigest float64) (*Group, []runSamples) {
	rs := make([]runSamples, runs)
	for i := range rs {
		u := 0.35 * rng.NormFloat64()
		for k := 0; k < n; k++ {
			rs[i].h2 = append(rs[i].h2, math.Round(50*math.Exp(u+0.3*rng.NormFloat64())*10)/10)
			rs[i].h3 = append(rs[i].h3, math.Round(48*math.Exp(u+0.25*rng.NormFloat64())*10)/10)
		}
		slices.Sort(rs[i].h2)
		slices.Sort(rs[i].h3)
	}
	g := &Group{Group: "g", Runs: runs, Samples: 2 * runs * n}
	stats := func() *Stats {
		s := &Stats{Runs: runs, Samples: runs * n, Percentiles: make([]Percentile, len(percentiles))}
		for i, p := range percentiles {
			s.Percentiles[i] = Percentile{P: p, MS: tdigest}
		}
		s.markSufficiency(runs)
		return s
	}
	g.H2, g.H3 = stats(), stats()
	return g, rs
}

func pooled(rs []runSamples, h3 bool) []float64 {
	var all []float64
	for _, r := range rs {
		if h3 {
			all = append(all, r.h3...)
		} else {
			all = append(all, r.h2...)
		}
	}
	slices.Sort(all)
	return all
}

// A small group gets exact type-7 percentiles instead of the t-digest's,
// and intervals only where the rule allows.
func TestSmallGroupExactAndSufficiency(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	g, rs := smallGroup(rng, 40, 5, -1) // 200 samples per protocol, as in the issue
	analyse(context.Background(), g, rs, &Options{Replicates: 300, Seed: 1})
	for _, c := range []struct {
		name string
		s    *Stats
		all  []float64
	}{{"h2", g.H2, pooled(rs, false)}, {"h3", g.H3, pooled(rs, true)}} {
		if !c.s.Exact {
			t.Errorf("%s: 200 samples, all fetched, not exact", c.name)
		}
		for _, p := range c.s.Percentiles {
			if want := exactQuantile(c.all, p.P/100); math.Abs(p.MS-want) > 5e-4 {
				t.Errorf("%s p%g = %.3f, exact type 7 is %.3f", c.name, p.P, p.MS, want)
			}
			// 40 runs: p50 needs 30, p75 already 60.
			if p.Insufficient != (p.P > 50) || (p.CILowMS == nil) != p.Insufficient {
				t.Errorf("%s p%g: insufficient %v, interval %v, with 40 runs", c.name, p.P, p.Insufficient, p.CILowMS != nil)
			}
		}
	}
	for i, d := range g.Diff {
		if d.MS != round3(g.H3.Percentiles[i].MS-g.H2.Percentiles[i].MS) || d.Insufficient != (d.P > 50) ||
			(d.CILowMS == nil) != d.Insufficient || (d.CILowPct == nil) != d.Insufficient {
			t.Errorf("diff p%g: %+v", d.P, d)
		}
	}

	// The t-digest stays for a thinned group, for a count that disagrees
	// with the point query's, and from ExactBelowSamples on.
	for _, tc := range []struct {
		name string
		edit func(g *Group, rs []runSamples) []runSamples
	}{
		{"thinned", func(g *Group, rs []runSamples) []runSamples { g.Sampled, g.Runs = true, 400; return rs }},
		{"count differs", func(g *Group, rs []runSamples) []runSamples { g.H2.Samples++; g.H3.Samples++; return rs }},
		{"large", func(g *Group, rs []runSamples) []runSamples {
			big, more := smallGroup(rng, ExactBelowSamples/5, 5, -1)
			*g = *big
			return more
		}},
	} {
		g, rs := smallGroup(rng, 40, 5, -1)
		rs = tc.edit(g, rs)
		analyse(context.Background(), g, rs, &Options{Replicates: -1})
		if g.H2.Exact || g.H3.Exact || g.H2.Percentiles[0].MS != -1 || g.H3.Percentiles[4].MS != -1 {
			t.Errorf("%s: exact %v/%v, p50 %v", tc.name, g.H2.Exact, g.H3.Exact, g.H2.Percentiles[0].MS)
		}
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

// draw makes m runs. They carry no parallel-batch or availability data:
// the paired view and availability are not under test, and without them
// the bootstrap is a fifth faster.
func (c *coverageModel) draw(rng *rand.Rand, m int) []runSamples {
	runs := make([]runSamples, m)
	for i := range runs {
		u := c.RunSD * rng.NormFloat64()
		r := &runs[i]
		// A random batch order, as the script's: the estimates weigh the
		// two orders equally (order.go), so coverage is checked for that
		// estimator with the chance imbalance a real group has.
		r.h3First = rng.IntN(2) == 1
		r.h2, r.h3 = make([]float64, c.PerRun), make([]float64, c.PerRun)
		for k := range c.PerRun {
			r.h2[k] = c.MedianH2 * math.Exp(u+c.SDH2*rng.NormFloat64())
			r.h3[k] = c.MedianH3 * math.Exp(u+c.SDH3*rng.NormFloat64())
		}
		slices.Sort(r.h2)
		slices.Sort(r.h3)
	}
	return runs
}

// TestIntervalCoverage checks the sufficiency rule by simulation: for each
// percentile p, data sets of exactly the runs the rule asks for
// (runsNeeded(p)) are drawn from coverageModel and go through analyse — the
// report's own exact percentiles, rule and cluster bootstrap with the
// default 1000 replicates — and the share of data sets whose 95 % interval
// holds the true value is counted, for H2, H3 and H3 − H2 at p.
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
//
// Measured, H2 / H3 / H3 − H2 coverage in % (-coverage-sets 8000, so ±0.5
// points; 800 by default):
//
//	MinTailRuns = 15   p50 at   30 runs  95.6 / 95.2 / 98.9
//	(the rule, orders  p75 at   60 runs  94.9 / 94.9 / 98.4
//	random, weighed    p90 at  150 runs  94.8 / 94.6 / 97.9
//	equally)           p95 at  300 runs  95.3 / 94.9 / 97.8
//	                   p99 at 1500 runs  94.7 / 94.6 / 97.0
//	the rows below were measured before the batch orders were balanced:
//	MinTailRuns = 15   p50 at   30 runs  93.7 / 93.9 / 97.6
//	(orders pooled)    p75 at   60 runs  93.9 / 94.2 / 97.3
//	                   p90 at  150 runs  93.9 / 93.9 / 97.2
//	                   p95 at  300 runs  94.4 / 94.0 / 96.7
//	                   p99 at 1500 runs  94.0 / 94.1 / 96.2
//	MinTailRuns = 10   p50 at   20 runs  93.3 / 93.4 / 97.8
//	                   p90 at  100 runs  93.0 / 93.1 / 97.2
//	                   p99 at 1000 runs  94.1 / 93.5 / 96.7   (at the edge:
//	                   passes here, 92.9 % at p95 with a stronger run effect)
//	MinTailRuns = 5    p50 at   10 runs  91.2 / 91.5 / 97.4   (4000 data sets;
//	                   p90 at   50 runs  91.1 / 91.6 / 97.3   the test fails:
//	                   p99 at  500 runs  92.8 / 92.3 / 96.8   mean 91.9 %, and
//	                   with 800 data sets mean 91.4 %, p90 H2 89.5 %)
//	no rule, 30 runs   H2 p95 86.0, p99 68.0 (the 87 and 67)
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
		meanTol = 2.5 * math.Sqrt(target*(1-target)/float64(2*len(percentiles)*sets))
	}
	cm := coverageModel{PerRun: 5, RunSD: 0.35, MedianH2: 50, SDH2: 0.30, MedianH3: 48, SDH3: 0.25}
	qs := percentiles[:]
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
		t.Logf("p%g at %4d runs (%d data sets): coverage H2 %.1f %%, H3 %.1f %%, H3 − H2 %.1f %%", p, runsNeeded(p), sets, 100*c2, 100*c3, 100*cd)
		for _, c := range []struct {
			what string
			v    float64
		}{{"H2", c2}, {"H3", c3}, {"H3 − H2", cd}} {
			if c.v < target-tol {
				t.Errorf("p%g %s: coverage %.1f %% at the rule's threshold (%d runs), significantly below %.0f %% (tolerance %.1f points)",
					p, c.what, 100*c.v, runsNeeded(p), 100*target, 100*tol)
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

// coverOnce draws data set number set at percentile index k's threshold,
// runs analyse and reports which intervals hold the truth at k. It also
// checks the rule's flags: k has intervals, the higher percentiles not.
func (c *coverageModel) coverOnce(k, set int) (h2, h3, diff int, err error) {
	p := percentiles[k]
	m := runsNeeded(p)
	rng := rand.New(rand.NewPCG(uint64(k+1), uint64(set)))
	runs := c.draw(rng, m)
	g := &Group{Group: "sim", Runs: m, Samples: 2 * m * c.PerRun}
	stats := func() *Stats {
		s := &Stats{Runs: m, Samples: m * c.PerRun, Percentiles: make([]Percentile, len(percentiles))}
		for i, p := range percentiles {
			s.Percentiles[i].P = p
		}
		return s
	}
	g.H2, g.H3 = stats(), stats()
	analyse(context.Background(), g, runs, &Options{Replicates: DefaultReplicates, Seed: uint64(set) + 1})

	for i := range percentiles {
		a, b, d := g.H2.Percentiles[i], g.H3.Percentiles[i], g.Diff[i]
		shown := i <= k
		if !g.H2.Exact || a.Insufficient == shown || b.Insufficient == shown || d.Insufficient == shown ||
			(a.CILowMS != nil) != shown || (b.CILowMS != nil) != shown || (d.CILowMS != nil) != shown {
			return 0, 0, 0, fmt.Errorf("%d runs, p%g: exact %v, insufficient %v/%v/%v, intervals %v/%v/%v; want intervals %v",
				m, percentiles[i], g.H2.Exact, a.Insufficient, b.Insufficient, d.Insufficient, a.CILowMS != nil, b.CILowMS != nil, d.CILowMS != nil, shown)
		}
	}
	t2, t3 := c.truth(p / 100)
	in := func(lo, hi *float64, v float64) int {
		if *lo <= v && v <= *hi {
			return 1
		}
		return 0
	}
	a, b, d := g.H2.Percentiles[k], g.H3.Percentiles[k], g.Diff[k]
	return in(a.CILowMS, a.CIHighMS, t2), in(b.CILowMS, b.CIHighMS, t3), in(d.CILowMS, d.CIHighMS, t3-t2), nil
}

// The bootstrap stops when its context ends: a report whose client left
// does not compute on.
func TestBootstrapStopsWhenCanceled(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	g, rs := smallGroup(rng, 200, 5, -1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	analyse(ctx, g, rs, &Options{Replicates: MaxReplicates, Seed: 1})
	for _, s := range []*Stats{g.H2, g.H3} {
		if p := s.Percentiles[0]; p.CILowMS != nil {
			t.Errorf("canceled bootstrap still produced an interval: %+v", p)
		}
	}
	g, rs = smallGroup(rng, 200, 5, -1)
	analyse(context.Background(), g, rs, &Options{Replicates: 200, Seed: 1})
	if p := g.H2.Percentiles[0]; p.CILowMS == nil {
		t.Errorf("bootstrap without cancellation gave no interval: %+v", p)
	}
}
