package model

import (
	"math"
	"strings"
	"testing"

	"github.com/h3rum/h3rum/queries/stats"
)

// Judge, case by case, on groups made by hand.
func TestJudge(t *testing.T) {
	outcome := func(runs int) *Stats { return &Stats{Runs: runs, fetchedRuns: runs} }
	group := func(runs int, d *Diff) *Group {
		g := &Group{Group: "G", H2: outcome(runs), H3: outcome(runs)}
		if d != nil {
			g.Diff = []Diff{{P: 50}, *d}
		}
		return g
	}
	at95 := func(ms, lo, hi float64) *Diff {
		return &Diff{P: 95, MS: ms, Pct: ms / 2, CILowMS: &lo, CIHighMS: &hi}
	}
	// An interval 2 × 1.96 × 5 ms wide: SE 5 ms, MDE 2.80 × 5 = 14.01 ms.
	hw := stats.Margin(5)
	for _, tc := range []struct {
		name    string
		g       *Group
		rule    VerdictRule
		verdict string
		text    string
		mde     float64 // 0: none
		more    int     // more runs for the effect, or for an interval
	}{
		{"faster", group(4210, at95(-146, -146-hw, -146+hw)), VerdictRule{}, VerdictFaster,
			"G: HTTP/3 faster at p95 by 146 ms (95 % CI 136–156 ms), 4 210 runs", 14.01, -1},
		{"slower", group(800, at95(40, 40-hw, 40+hw)), VerdictRule{}, VerdictSlower,
			"G: HTTP/3 slower at p95 by 40 ms (95 % CI 30–50 ms), 800 runs", 14.01, 770}, // 800 × 1.96 = 1570: 770 more
		// 1000 × (14.01 / 10)² = 1962.6: 963 more, said as ~960.
		{"no difference", group(1000, at95(2.1, 2.1-hw, 2.1+hw)), VerdictRule{}, VerdictNoDifference,
			"G: no difference detectable at p95 (H3 − H2 +2.1 ms, 95 % CI −7.7 to +12 ms), 1 000 runs; " +
				"with these runs the smallest detectable difference is ±14 ms; ~960 more runs would detect 10 ms", 14.01, 963},
		{"no difference, effect already detectable", group(1000, at95(0, -hw, hw)), VerdictRule{EffectMS: 20}, VerdictNoDifference,
			"G: no difference detectable at p95 (H3 − H2 0.0 ms, 95 % CI −9.8 to +9.8 ms), 1 000 runs; " +
				"with these runs the smallest detectable difference is ±14 ms, below 20 ms", 14.01, 0},
		{"zero on the edge", group(1000, at95(-5, -10, 0)), VerdictRule{}, VerdictNoDifference, "", 7.15, -1},
		{"not enough runs", group(120, &Diff{P: 95, MS: -30, Insufficient: true}), VerdictRule{}, VerdictNotEnoughRuns,
			"G: not enough runs yet for a verdict at p95: 120 runs with both protocols, 300 needed (180 more)", 0, 180},
		{"below min_runs", group(400, at95(-146, -150, -140)), VerdictRule{MinRuns: 500}, VerdictNotEnoughRuns,
			"G: not enough runs yet for a verdict at p95: 400 runs with both protocols, 500 needed (100 more)", 0, 100},
		{"no HTTP/3", &Group{Group: "G", H2: outcome(900)}, VerdictRule{}, VerdictNotEnoughRuns,
			"G: not enough runs yet for a verdict at p95: 0 runs with both protocols, 300 needed (300 more)", 0, 300},
		{"no interval", group(1000, &Diff{P: 95, MS: -12}), VerdictRule{}, VerdictNoInterval,
			"G: H3 − H2 at p95 −12 ms; no interval, so no verdict", 0, -1},
		{"another percentile", group(1000, at95(-146, -150, -140)), VerdictRule{P: 50}, VerdictNoInterval, "", 0, -1},
	} {
		v := tc.rule.Judge(tc.g)
		if v.Verdict != tc.verdict || (tc.text != "" && v.Text != tc.text) {
			t.Errorf("%s: %s %q, want %s %q", tc.name, v.Verdict, v.Text, tc.verdict, tc.text)
		}
		if (v.MDEMS != nil) != (tc.mde != 0) || (v.MDEMS != nil && math.Abs(*v.MDEMS-tc.mde) > 0.01) {
			t.Errorf("%s: MDE %v, want %v", tc.name, v.MDEMS, tc.mde)
		}
		switch {
		case tc.more < 0:
		case v.Verdict == VerdictNotEnoughRuns:
			if v.MoreRunsForInterval != tc.more || v.MoreRunsForEffect != nil {
				t.Errorf("%s: %d more runs for an interval, want %d", tc.name, v.MoreRunsForInterval, tc.more)
			}
		case v.MoreRunsForEffect == nil || *v.MoreRunsForEffect != tc.more || v.MoreRunsForInterval != 0:
			t.Errorf("%s: more runs for the effect %v, want %d", tc.name, v.MoreRunsForEffect, tc.more)
		}
	}

	// The MDE scales as 1/√runs, and the runs for an effect invert it.
	v := VerdictRule{}.Judge(group(1000, at95(2.1, 2.1-hw, 2.1+hw)))
	if m, ok := v.MDEAt(4000); !ok || math.Abs(m-*v.MDEMS/2) > 1e-9 {
		t.Errorf("MDE at four times the runs: %v, want half of %v", m, *v.MDEMS)
	}
	if n, ok := v.RunsToDetect(*v.MDEMS / 2); !ok || n != 4000 {
		t.Errorf("runs to detect half the MDE: %d, want 4000", n)
	}
	if n, ok := v.RunsToDetect(-*v.MDEMS / 2); !ok || n != 4000 {
		t.Errorf("runs to detect minus half the MDE: %d, want 4000", n)
	}
	if n, ok := v.RunsToDetect(1000); !ok || n != 300 {
		t.Errorf("runs to detect a huge effect: %d, want what an interval needs (300)", n)
	}
	for _, e := range []float64{0, math.NaN(), math.Inf(1), 1e-300, 5e-324} {
		if n, ok := v.RunsToDetect(e); ok {
			t.Errorf("runs to detect %v: %d, ok", e, n)
		}
	}
	if n, ok := v.RunsToDetect(MinEffectMS); !ok || n <= 4000 {
		t.Errorf("runs to detect the smallest effect, %g ms: %d, %v", MinEffectMS, n, ok)
	}
	none := VerdictRule{}.Judge(group(100, nil))
	if _, ok := none.MDEAt(1000); ok {
		t.Error("MDE at 1000 runs without an interval: ok")
	}
}

func TestVerdictNumbers(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1 000", 4210: "4 210", 12500: "12 500", 1234567: "1 234 567"} {
		if got := GroupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int]int{0: 0, 87: 87, 100: 100, 963: 960, 2437: 2400, 2450: 2500, 12345: 12000, 99999: 100000} {
		if got := twoSignificant(n); got != want {
			t.Errorf("twoSignificant(%d) = %d, want %d", n, got, want)
		}
	}
	for v, want := range map[float64]string{146.4: "146", 9.94: "9.9", 9.96: "10", 0.04: "0.0"} {
		if got := roughMS(v); got != want {
			t.Errorf("roughMS(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{-12.3: "−12", 3.25: "+3.2", 0.04: "0.0", -0.04: "0.0"} {
		if got := signedRough(v); got != want {
			t.Errorf("signedRough(%v) = %q, want %q", v, got, want)
		}
	}
}

// An experiment judges by the confidence sequence: a one-look verdict
// that the sequence does not support keeps going, one it supports stands,
// and a difference the sequence puts within the effect of interest is no
// difference of that size.
func TestJudgeExperiment(t *testing.T) {
	outcome := func(runs int) *Stats { return &Stats{Runs: runs, fetchedRuns: runs} }
	group := func(runs int, ms, lo, hi float64) *Group {
		return &Group{Group: "G", H2: outcome(runs), H3: outcome(runs), Diff: []Diff{{P: 95, MS: ms, CILowMS: &lo, CIHighMS: &hi}}}
	}
	rule := VerdictRule{Experiment: true}
	var seq stats.Sequence
	hw := stats.Margin(2) // one look's half width for SE 2 ms
	for _, tc := range []struct {
		name             string
		g                *Group
		verdict, oneLook string
		text             string
	}{
		{"decided", group(1000, -20, -20-hw, -20+hw), VerdictFaster, VerdictFaster,
			"G: HTTP/3 faster at p95 by 20 ms (experiment: anytime-valid 95 % CI −28 to −12 ms), 1 000 runs"},
		{"one look only", group(1000, -5, -5-hw, -5+hw), VerdictKeepGoing, VerdictFaster,
			"G: keep going at p95 (experiment: H3 − H2 −5.0 ms, anytime-valid 95 % CI −13 to +2.7 ms), 1 000 runs; these runs would decide 10 ms"},
		{"none of interest", group(1000, 0.5, 0.5-hw, 0.5+hw), VerdictNoDifference, VerdictNoDifference,
			"G: no difference of 10 ms or more at p95 (experiment: H3 − H2 +0.5 ms, anytime-valid 95 % CI −7.2 to +8.2 ms), 1 000 runs"},
		{"slower", group(1000, 12, 12-hw, 12+hw), VerdictSlower, VerdictSlower, ""},
	} {
		v := rule.Judge(tc.g)
		if v.Verdict != tc.verdict || v.Experiment == nil || v.Experiment.OneLook != tc.oneLook || (tc.text != "" && v.Text != tc.text) {
			t.Errorf("%s: %s (one look %+v) %q, want %s (one look %s) %q", tc.name, v.Verdict, v.Experiment, v.Text, tc.verdict, tc.oneLook, tc.text)
			continue
		}
		m := seq.Multiplier(1000)
		if e := v.Experiment; math.Abs(e.Multiplier-m) > 1e-3 || math.Abs(e.CIHighMS-e.CILowMS-2*m*2) > 2e-3 {
			t.Errorf("%s: interval %v–%v with multiplier %v, want %v × SE 2 either side", tc.name, e.CILowMS, e.CIHighMS, e.Multiplier, m)
		}
	}
	hw4 := stats.Margin(4)
	v := rule.Judge(&Group{Group: "EU", H2: outcome(1000), H3: outcome(1000), Diff: group(1000, -5, -5-hw4, -5+hw4).Diff})
	if want := "EU: keep going at p95 (experiment: H3 − H2 −5.0 ms, anytime-valid 95 % CI −20 to +10 ms), 1 000 runs; ~1 700 more runs to decide 10 ms"; v.Text != want {
		t.Errorf("keep going: %q, want %q (REPORT.md's example)", v.Text, want)
	}
	if e := v.Experiment; e.MoreRunsToDecide == nil || *e.MoreRunsToDecide <= 0 || !strings.Contains(v.Text, "more runs to decide 10 ms") {
		t.Errorf("keep going says how many more runs: %+v %q", e, v.Text)
	}
	// A window's verdict (no experiment) carries no sequence and keeps its
	// one-look text.
	if w := (VerdictRule{}).Judge(group(1000, -5, -5-hw, -5+hw)); w.Experiment != nil || w.Verdict != VerdictFaster {
		t.Errorf("one look: %s %+v", w.Verdict, w.Experiment)
	}
}
