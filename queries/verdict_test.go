package queries

import (
	"context"
	"flag"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// powerSets overrides TestPowerRuleBySimulation's data sets per phase.
var powerSets = flag.Int("power-sets", 0, "data sets per phase in TestPowerRuleBySimulation (0: 1000, 100 under -race or -short)")

// powerModel is TestPowerRuleBySimulation's known distribution: the
// interval coverage's (coverageModel: 5 requests per origin and run, a
// per-run effect shared by H2 and H3) with both protocols alike, so that
// H3 − H2 is zero at every percentile until Shift moves every H3 request
// by the same amount of ms: then it is Shift at every percentile.
func powerModel() coverageModel {
	return coverageModel{PerRun: 5, RunSD: 0.35, MedianH2: 50, SDH2: 0.30, MedianH3: 50, SDH3: 0.30}
}

// judgeOnce draws data set set of a phase with m runs and H3 shifted by
// shift ms, computes it as the report does (analyse: exact percentiles,
// the sufficiency rule, 1000 bootstrap replicates) and judges it at p.
func judgeOnce(phase, set, m int, shift, p float64) Verdict {
	cm := powerModel()
	rng := rand.New(rand.NewPCG(uint64(1000+phase), uint64(set)))
	runs := cm.draw(rng, m)
	for i := range runs {
		for k, v := range runs[i].h3 {
			runs[i].h3[k] = max(v+shift, 0.1) // monotone: the run's values stay sorted
		}
	}
	g := &Group{Group: "sim", Runs: m, Samples: 2 * m * cm.PerRun}
	stats := func() *Stats {
		s := &Stats{Runs: m, Samples: m * cm.PerRun, Percentiles: make([]Percentile, len(percentiles))}
		for i, p := range percentiles {
			s.Percentiles[i].P = p
		}
		return s
	}
	g.H2, g.H3 = stats(), stats()
	analyse(context.Background(), g, runs, &Options{Replicates: DefaultReplicates, Seed: uint64(set) + 1})
	return VerdictRule{P: p}.Judge(g)
}

// judgeAll runs judgeOnce for sets data sets on every core.
func judgeAll(t *testing.T, phase, sets, m int, shift, p float64) []Verdict {
	t.Helper()
	out := make([]Verdict, sets)
	work := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for set := range work {
				out[set] = judgeOnce(phase, set, m, shift, p)
			}
		})
	}
	for set := range sets {
		work <- set
	}
	close(work)
	wg.Wait()
	return out
}

// TestPowerRuleBySimulation checks the power rule on data sets whose truth
// is known (powerModel), computed by the report's own code at p95 with 600
// runs, twice what an interval there needs:
//
//   - null: H3 and H2 alike. A verdict of faster or slower is a false
//     alarm; the rate must not be significantly above 5 %. The median of
//     the MDEs these data sets state is M.
//   - planted at the MDE: every H3 request M ms faster. The verdict must
//     read faster in at least 80 % of data sets (not significantly fewer),
//     and in at most 90 %: an MDE much too large would tell an operator to
//     wait for runs that are not needed.
//   - planted at half the runs: 300 runs and an effect of M·√2, which the
//     rule (MDE ∝ 1/√runs) says 300 runs detect with 80 % power. Same
//     bounds.
//
// "Significantly" is 2.5 binomial standard errors of the data sets: with
// 1000 per phase that is ±1.7 points at 5 % and ±3.2 points at 80 %. The
// upper bound of 90 % is far from 80 % for the same reason in reverse.
// Under -race and -short, 100 data sets per phase (±5.5 and ±10 points):
// gross errors only, such as an MDE without z₀.₈₀ (50 % power) or a
// standard error taken as the interval's half width (99 %); `make test`
// runs it again without -race.
func TestPowerRuleBySimulation(t *testing.T) {
	sets := *powerSets
	if sets == 0 {
		sets = 1000
		if testing.Short() || raceEnabled() {
			sets = 100
		}
	}
	const p, n = 95.0, 600
	tol := func(rate float64) float64 { return 2.5 * math.Sqrt(rate*(1-rate)/float64(sets)) }
	count := func(vs []Verdict, kind ...string) float64 {
		c := 0
		for _, v := range vs {
			if slices.Contains(kind, v.Verdict) {
				c++
			}
		}
		return float64(c) / float64(len(vs))
	}
	start := time.Now()

	null := judgeAll(t, 0, sets, n, 0, p)
	var mdes []float64
	for _, v := range null {
		if v.MDEMS == nil {
			t.Fatalf("null data set without an MDE: %+v", v)
		}
		mdes = append(mdes, *v.MDEMS)
	}
	slices.Sort(mdes)
	m := quantile7(mdes, 0.5)
	alarms := count(null, VerdictFaster, VerdictSlower)
	t.Logf("null, %d runs, %d data sets: a difference declared in %.1f %%; stated MDE median %.2f ms (10–90 %%: %.2f–%.2f)",
		n, sets, 100*alarms, m, quantile7(mdes, 0.1), quantile7(mdes, 0.9))
	if alarms > 0.05+tol(0.05) {
		t.Errorf("no difference planted: %.1f %% of data sets declared one, significantly above 5 %% (tolerance %.1f points)",
			100*alarms, 100*tol(0.05))
	}

	for _, c := range []struct {
		name   string
		runs   int
		effect float64
	}{
		{"planted at the MDE", n, m},
		{"planted at half the runs", n / 2, m * math.Sqrt(2)},
	} {
		vs := judgeAll(t, 1+c.runs, sets, c.runs, -c.effect, p)
		hit := count(vs, VerdictFaster)
		t.Logf("%s: %d runs, H3 %.2f ms faster at every percentile: HTTP/3 faster in %.1f %% of %d data sets",
			c.name, c.runs, c.effect, 100*hit, sets)
		if hit < VerdictPower-tol(VerdictPower) {
			t.Errorf("%s: detected in %.1f %% of data sets, significantly below %.0f %% (tolerance %.1f points)",
				c.name, 100*hit, 100*VerdictPower, 100*tol(VerdictPower))
		}
		if hit > 0.90+tol(0.90) {
			t.Errorf("%s: detected in %.1f %% of data sets: the stated MDE is much too large (80 %% wanted, at most 90 %%)",
				c.name, 100*hit)
		}
		if wrong := count(vs, VerdictSlower); wrong > 0.01 {
			t.Errorf("%s: %.1f %% of data sets read slower", c.name, 100*wrong)
		}
	}
	t.Logf("%d data sets in %v", 3*sets, time.Since(start).Round(time.Millisecond))
}
