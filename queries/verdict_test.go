package queries

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/queries/stats"
	"github.com/h3rum/h3rum/queries/synth"
)

// The verdicts of a report over ClickHouse read as planted: Asia 150 ms
// faster at p95 and alike at the median, no difference in Europe and North
// America, and too few runs in Oceania — in the JSON, the table's first
// lines and the dashboard.
func TestVerdictsReadAsPlanted(t *testing.T) {
	// Asia's difference at p95 varies by about 4.5 ms (standard deviation)
	// from draw to draw at 1500 runs, so it must come within 15 ms of the
	// planted 150; the others must hold zero in their intervals, as 95 %
	// of draws do.
	plant := synth.Planted{Seed: 1, P: 95, Regions: []synth.PlantedRegion{
		{Continent: "AS", Country: "JP", Subdivision: "JP-13", Runs: 1500, MedianMS: 150, DiffMS: -150},
		{Continent: "EU", Country: "DE", Subdivision: "DE-BE", Runs: 1200, MedianMS: 30},
		{Continent: "NA", Country: "US", Subdivision: "US-CA", Runs: 400, MedianMS: 80},
		{Continent: "OC", Country: "AU", Subdivision: "AU-NSW", Runs: 120, MedianMS: 90},
	}}
	rows, err := plant.Rows()
	if err != nil {
		t.Fatal(err)
	}
	conn := newDB(t)
	load(t, conn, rows)
	window := Options{Since: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC)}

	rep, err := Run(context.Background(), conn, window)
	if err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, rep)
	byGroup := map[string]Verdict{}
	for _, v := range rep.Verdicts {
		byGroup[v.Group] = v
	}
	if len(rep.Verdicts) != len(rep.Groups) || len(byGroup) != len(plant.Regions) {
		t.Fatalf("%d verdicts for %d groups: %+v", len(rep.Verdicts), len(rep.Groups), rep.Verdicts)
	}
	for i, g := range rep.Groups {
		if rep.Verdicts[i].Group != g.Group {
			t.Errorf("verdict %d is for %s, group %d is %s: want the groups' order", i, rep.Verdicts[i].Group, i, g.Group)
		}
	}
	want := map[string]string{"AS": VerdictFaster, "EU": VerdictNoDifference, "NA": VerdictNoDifference, "OC": VerdictNotEnoughRuns}
	for _, r := range plant.Regions {
		v := byGroup[r.Continent]
		t.Logf("%s", v.Text)
		if v.Verdict != want[r.Continent] || v.P != 95 {
			t.Errorf("%s: verdict %s at p%g, want %s at p95 (%s)", r.Continent, v.Verdict, v.P, want[r.Continent], v.Text)
			continue
		}
		if v.Verdict == VerdictNotEnoughRuns {
			if v.Runs != r.Runs || v.RunsForInterval != 300 || v.MoreRunsForInterval != 300-v.Runs || v.MDEMS != nil {
				t.Errorf("%s: %s; want %d runs (exact), 300 needed, the rest more, no MDE", r.Continent, v.Text, r.Runs)
			}
			continue
		}
		if v.CILowMS == nil || math.Abs(*v.DiffMS-r.DiffMS) > 15 || v.MDEMS == nil || v.RunsForEffect == nil {
			t.Errorf("%s: planted %g ms at p95, far from the verdict's, or no MDE: %s", r.Continent, r.DiffMS, v.Text)
			continue
		}
		// The MDE is the interval's width in standard errors, and the
		// runs for 10 ms follow from it.
		if want := stats.MDE(stats.SE(*v.CILowMS, *v.CIHighMS)); math.Abs(*v.MDEMS-want) > 0.002 {
			t.Errorf("%s: MDE %v, want %v", r.Continent, *v.MDEMS, want)
		}
		if n := float64(v.Runs) * math.Pow(*v.MDEMS/10, 2); math.Abs(float64(*v.RunsForEffect)-max(n, 300)) > 1 {
			t.Errorf("%s: %d runs for 10 ms, want %.0f", r.Continent, *v.RunsForEffect, n)
		}
	}
	if v := byGroup["NA"]; v.MoreRunsForEffect == nil || *v.MoreRunsForEffect == 0 || !strings.Contains(v.Text, "more runs would detect 10 ms") {
		t.Errorf("NA, 400 runs: %s; want more runs needed for 10 ms", v.Text)
	}
	if v := byGroup["EU"]; v.MoreRunsForEffect == nil || *v.MoreRunsForEffect != 0 || !strings.HasSuffix(v.Text, "below 10 ms") {
		t.Errorf("EU, 1200 runs at 30 ms: %s; want 10 ms detectable already", v.Text)
	}

	// The table opens with them, under its title line.
	var tb bytes.Buffer
	if err := writeTable(&tb, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(tb.String(), "\n")
	for i, v := range rep.Verdicts {
		if lines[1+i] != v.Text {
			t.Errorf("table line %d: %q, want %q", 2+i, lines[1+i], v.Text)
		}
	}
	if as := lines[1]; !strings.HasPrefix(as, "AS: HTTP/3 faster at p95 by ") || !strings.Contains(as, "(95 % CI ") || !strings.HasSuffix(as, "1 500 runs") {
		t.Errorf("table's first verdict: %q", as)
	}
	if !strings.HasPrefix(lines[1+len(rep.Verdicts)], "(verdicts: each group judged at its own 95 % interval") {
		t.Errorf("the verdicts' rule does not follow them: %q", lines[1+len(rep.Verdicts)])
	}

	// The JSON carries them as documented.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Verdicts []map[string]any `json:"verdicts"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Verdicts) != len(rep.Verdicts) {
		t.Fatalf("JSON verdicts: %v, %d", err, len(doc.Verdicts))
	}
	for _, k := range []string{"group", "p", "verdict", "runs", "diff_ms", "diff_pct", "ci_low_ms", "ci_high_ms", "level", "power",
		"mde_ms", "effect_ms", "runs_for_effect", "more_runs_for_effect", "runs_for_interval", "more_runs_for_interval", "text"} {
		if _, ok := doc.Verdicts[0][k]; !ok {
			t.Errorf("JSON verdict lacks %q: %v", k, doc.Verdicts[0])
		}
	}

	// The dashboard says them first.
	page, err := renderDashboard(rep, &rep.opts, false)
	if err != nil {
		t.Fatal(err)
	}
	items := regexp.MustCompile(`<li class="verdict [a-z0-9_]+" data-group="([^"]*)" data-verdict="([a-z0-9_]+)">([^<]*)</li>`).FindAllSubmatch(page, -1)
	if len(items) != len(rep.Verdicts) {
		t.Errorf("dashboard shows %d verdicts, the report has %d", len(items), len(rep.Verdicts))
	}
	for i, m := range items {
		if v := rep.Verdicts[min(i, len(rep.Verdicts)-1)]; string(m[1]) != v.Group || string(m[2]) != v.Verdict || html.UnescapeString(string(m[3])) != v.Text {
			t.Errorf("dashboard verdict %d: %s %s %q, want %s %s %q", i, m[1], m[2], m[3], v.Group, v.Verdict, v.Text)
		}
	}
	if i, j := bytes.Index(page, []byte(`id="verdicts"`)), bytes.Index(page, []byte(`id="report"`)); i < 0 || i > j {
		t.Errorf("dashboard: verdicts at %d, the table at %d: want the verdicts first", i, j)
	}

	// At the median, where nothing was planted, Asia reads no difference.
	at50 := window
	at50.VerdictP = 50
	rep50, err := Run(context.Background(), conn, at50)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep50.Verdicts {
		if v.P != 50 || v.Verdict != VerdictNoDifference {
			t.Errorf("p50, alike everywhere: %s", v.Text)
		}
	}
}

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
		if got := groupDigits(n); got != want {
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
