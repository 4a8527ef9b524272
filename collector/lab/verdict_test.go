package lab

import (
	"strings"
	"testing"

	"github.com/h3rum/h3rum/queries/model"
)

// stats is a protocol's stats with runs and the given p50 and p90.
func stats(runs int, p50, p90 float64) *model.Stats {
	return &model.Stats{Runs: runs, Percentiles: []model.Percentile{{P: 50, MS: p50}, {P: 90, MS: p90}}}
}

func fp(v float64) *float64 { return &v }

// group is a continent's group with both protocols, full availability
// and, with ci > 0, an H3 − H2 interval of half-width ci at p90.
func group(continent string, runs int, h2p50, h3p50, h2p90, h3p90, ci float64) model.Group {
	g := model.Group{Group: continent, H2: stats(runs, h2p50, h2p90), H3: stats(runs, h3p50, h3p90),
		Availability: &model.Availability{Share: 1}}
	d := model.Diff{P: 90, MS: h3p90 - h2p90}
	if ci > 0 {
		d.CILowMS, d.CIHighMS = fp(d.MS-ci), fp(d.MS+ci)
	} else {
		d.Insufficient = true
	}
	g.Diff = []model.Diff{d}
	return g
}

func TestSelfCheckJudge(t *testing.T) {
	control := Observed{Region: Region{Name: "control", Continent: "NA", Up: Path{DelayMS: 10}, Down: Path{DelayMS: 10}}}
	mid := Observed{Region: Region{Name: "mid", Continent: "AS", Up: Path{DelayMS: 50}, Down: Path{DelayMS: 50}}}
	lossy := Observed{Region: Region{Name: "lossy", Continent: "SA", Up: Path{DelayMS: 40, LossPct: 5, LossBurst: 3}, Down: Path{DelayMS: 40, LossPct: 5, LossBurst: 3}}}
	blocked := Observed{Region: Region{Name: "blocked", Continent: "AF", Up: Path{DelayMS: 20}, Down: Path{DelayMS: 20}, BlockUDP: true}}
	regions := []Observed{control, mid, lossy, blocked}
	planned := map[string]int{"control": 10, "mid": 10, "lossy": 30, "blocked": 10}
	blockedGroup := model.Group{Group: "AF", H2: stats(10, 28, 30), Availability: &model.Availability{Share: 0}}
	report := func(lossyGroup model.Group, midP50 float64) *model.Report {
		return &model.Report{Groups: []model.Group{
			group("NA", 10, 26, 25, 30, 30, 0), // overhead 6 (h2) and 5 ms (h3)
			group("AS", 10, midP50, 105, 110, 110, 0),
			lossyGroup,
			blockedGroup,
		}}
	}
	// The lossy region's expected effect is its round trip, 80 ms: an
	// interval of half-width 40 ms gives an MDE of 2.80 × 40/1.96 ≈ 57 ms
	// (asserted), one of 80 ms ≈ 114 ms (not asserted).
	powerful := group("SA", 30, 120, 100, 400, 200, 40)
	weak := group("SA", 30, 120, 100, 300, 350, 80)
	for _, tc := range []struct {
		name   string
		passes []Pass
		ok     map[string]bool
		want   []string
	}{
		{"all pass", []Pass{{Engine: "chromium", Timed: true, Planned: planned, Report: report(powerful, 106)}},
			map[string]bool{"control": true, "mid": true, "lossy": true, "blocked": true},
			[]string{"calibration: region control", "h2 p50 106.0 ms (want 106.0 ± 15 %) ok", "under loss, h3 p90 200.0 < h2 p90 400.0 (asserted: MDE 57 ms ≤ expected effect 80 ms with 30 runs) ok",
				"UDP blocked: HTTP/3 availability 0 % (want 0) ok"}},
		{"a fallback under heavy loss is shown, one where the path is clean fails", []Pass{{Engine: "chromium", Timed: true, Planned: planned, Report: func() *model.Report {
			lossyFB := powerful
			lossyFB.Excluded = map[string]int{"fallback": 1}
			r := report(lossyFB, 106)
			r.Groups[0].Excluded = map[string]int{"fallback": 1} // control
			return r
		}()}},
			map[string]bool{"control": false, "mid": true, "lossy": true, "blocked": true},
			[]string{"runs with a fallback to TCP 1 (not checked under loss)", "runs with a fallback to TCP 1 FAILED"}},
		{"a median off the round trip fails", []Pass{{Engine: "chromium", Timed: true, Planned: planned, Report: report(powerful, 130)}},
			map[string]bool{"control": true, "mid": false, "lossy": true, "blocked": true},
			[]string{"h2 p50 130.0 ms (want 106.0 ± 15 %) FAILED"}},
		{"a median off the round trip within its measured noise passes, beyond it fails", []Pass{{Engine: "chromium", Timed: true, Planned: planned, Report: func() *model.Report {
			r := report(powerful, 130)
			noisy := func(st *model.Stats, half float64) {
				ms := st.Percentiles[0].MS
				st.Percentiles[0].CILowMS, st.Percentiles[0].CIHighMS = fp(ms-half), fp(ms+half)
			}
			noisy(r.Groups[0].H2, 4) // control: the calibration's own noise
			noisy(r.Groups[1].H2, 22)
			noisy(r.Groups[1].H3, 6) // mid's h3: 105 where 105 is wanted
			r.Groups[1].H3.Percentiles[0].MS = 125
			return r
		}()}},
			map[string]bool{"control": true, "mid": false, "lossy": true, "blocked": true},
			[]string{"h2 p50 130.0 ms (want 106.0 ± 26.0 ms, the medians' measured noise) ok", "h3 p50 125.0 ms (want 105.0 ± 15 %) FAILED"}},
		{"h3 slower at the tail without the power to tell: shown, not asserted", []Pass{{Engine: "chromium", Timed: true, Planned: planned, Report: report(weak, 106)}},
			map[string]bool{"control": true, "mid": true, "lossy": true, "blocked": true},
			[]string{"under loss, h3 p90 350.0, h2 p90 300.0 (not asserted: MDE 114 ms > expected effect 80 ms with 30 runs (150 would detect it))"}},
		{"no interval: not asserted", []Pass{{Engine: "chromium", Timed: true, Planned: planned, Report: report(group("SA", 30, 120, 100, 300, 350, 0), 106)}},
			map[string]bool{"control": true, "mid": true, "lossy": true, "blocked": true},
			[]string{"not asserted: no interval at p90 with 30 runs (the report needs 150)"}},
		{"one failed visit of a second engine is counted, not fatal", []Pass{
			{Engine: "chromium", Timed: true, Planned: planned, Report: report(powerful, 106)},
			{Engine: "firefox", Planned: map[string]int{"control": 3, "mid": 3, "lossy": 3, "blocked": 3}, Failed: map[string]int{"lossy": 1}, Report: report(powerful, 140)}},
			map[string]bool{"control": true, "mid": true, "lossy": true, "blocked": true},
			[]string{"firefox visits stored 2/3 (1 failed, counted; the checks need 2) ok", "firefox h2 p50 140.0 ms (106.0 expected; not checked)"}},
		{"too few stored visits fail the region", []Pass{
			{Engine: "chromium", Timed: true, Planned: planned, Report: report(powerful, 106)},
			{Engine: "firefox", Planned: map[string]int{"control": 3, "mid": 3, "lossy": 3, "blocked": 3}, Failed: map[string]int{"lossy": 2}, Report: report(powerful, 106)}},
			map[string]bool{"control": true, "mid": true, "lossy": false, "blocked": true},
			[]string{"firefox visits stored 1/3 (2 failed, counted; the checks need 2) FAILED"}},
		{"a run known before the page fails its region: lab profiles are fresh", []Pass{{Engine: "chromium", Timed: true, Planned: planned, Report: func() *model.Report {
			r := report(powerful, 106)
			r.FirstContact = &model.FirstContact{By: "continent", Groups: []model.FirstContactCount{
				{Group: "NA", Runs: 10, H3First: 4, FromPage: 4, Upgraded: 6},
				{Group: "AS", Runs: 10, H3First: 5, KnownBefore: 1, FromPage: 4, Upgraded: 5},
			}}
			return r
		}()}},
			map[string]bool{"control": true, "mid": false, "lossy": true, "blocked": true},
			[]string{"first contact: 0 of 4 runs first on h3 known before the page (fresh profiles, no HTTPS record: want 0; 4 from the page) ok",
				"first contact: 1 of 5 runs first on h3 known before the page (fresh profiles, no HTTPS record: want 0; 4 from the page) FAILED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := SelfCheck{}.Judge(regions, tc.passes, nil)
			checkVerdicts(t, res, tc.ok, tc.want)
			wantOK := true
			for _, ok := range tc.ok {
				wantOK = wantOK && ok
			}
			if res.OK() != wantOK {
				t.Errorf("OK %v, want %v", res.OK(), wantOK)
			}
		})
	}
}

// handshakes are an agent group's handshakes on a path of round trip
// rtt with base ms of the agent's and the server's own, each kind's
// fastest request at its round trips and its median slow by noise
// (which only ever adds).
func handshakes(rtt, base, noise float64, kinds ...string) []model.Handshake {
	var hs []model.Handshake
	for _, k := range agentHandshakes {
		for _, want := range kinds {
			if want == k.proto+" "+k.kind {
				fastest := k.trips*rtt + base
				hs = append(hs, model.Handshake{Proto: k.proto, Kind: k.kind, Samples: 3, FastestMS: fastest,
					Percentiles: []model.Percentile{{P: 50, MS: fastest + noise}}})
			}
		}
	}
	return hs
}

func TestSelfCheckAgent(t *testing.T) {
	control := Observed{Region: Region{Name: "control", Continent: "NA", Up: Path{DelayMS: 10}, Down: Path{DelayMS: 10}}}
	mid := Observed{Region: Region{Name: "mid", Continent: "AS", Up: Path{DelayMS: 50}, Down: Path{DelayMS: 50}}}
	blocked := Observed{Region: Region{Name: "blocked", Continent: "AF", Up: Path{DelayMS: 20}, Down: Path{DelayMS: 20}, BlockUDP: true}}
	all := []string{"h3 full", "h3 0rtt", "h2 full"}
	agentGroup := func(continent string, rtt, warm float64, hs []model.Handshake) model.Group {
		return model.Group{Group: continent, H2: stats(3, rtt+warm, rtt+warm), H3: stats(3, rtt+warm, rtt+warm),
			Availability: &model.Availability{Share: 1}, Handshakes: hs}
	}
	blockedGroup := func(hs []model.Handshake) model.Group {
		return model.Group{Group: "AF", Availability: &model.Availability{Share: 0}, Handshakes: hs}
	}
	for _, tc := range []struct {
		name    string
		regions []Observed
		groups  []model.Group
		ok      map[string]bool
		want    []string
	}{
		{"fastest handshakes at their round trips pass, however slow the median",
			[]Observed{control, mid, blocked},
			[]model.Group{agentGroup("NA", 20, 1.5, handshakes(20, 5, 0, all...)), agentGroup("AS", 100, 1.5, handshakes(100, 5, 40, all...)),
				blockedGroup(handshakes(40, 5, 60, "h2 full"))},
			map[string]bool{"control": true, "mid": true, "blocked": true},
			[]string{"agent h3 0rtt fastest 25.0 ms (5.0 ms over 1R: the base the other regions are judged by)", "agent calibration: region control puts the agent's and the server's own time at 1.5 ms (h2)",
				"agent h2 warm p50 101.5 ms (want 101.5) ok", "agent h3 full fastest 2.00R after 5.0 ms, region control's base (want 2R) ok",
				"agent h3 0rtt fastest 1.00R after 5.0 ms, region control's base (want 1R) ok", "agent h2 full fastest 3.00R after 5.0 ms, region control's base (want 3R) ok"}},
		{"a round trip more in every handshake fails",
			[]Observed{control, mid, blocked},
			[]model.Group{agentGroup("NA", 20, 1.5, handshakes(20, 5, 0, all...)), agentGroup("AS", 100, 1.5, handshakes(100, 105, 0, all...)),
				blockedGroup(handshakes(40, 45, 0, "h2 full"))},
			map[string]bool{"control": true, "mid": false, "blocked": false},
			[]string{"agent h3 0rtt fastest 2.00R after 5.0 ms, region control's base (want 1R) FAILED", "agent h2 full fastest 4.00R after 5.0 ms, region control's base (want 3R) FAILED"}},
		{"a warm median off the calibrated path fails",
			[]Observed{control, mid, blocked},
			[]model.Group{agentGroup("NA", 20, 1.5, handshakes(20, 5, 0, all...)), agentGroup("AS", 100, 30, handshakes(100, 5, 0, all...)),
				blockedGroup(handshakes(40, 5, 0, "h2 full"))},
			map[string]bool{"control": true, "mid": false, "blocked": true},
			[]string{"agent h2 warm p50 130.0 ms (want 101.5) FAILED"}},
		{"the only region calibrates: its handshakes are shown, not judged",
			[]Observed{mid},
			[]model.Group{agentGroup("AS", 100, 5, handshakes(100, 105, 0, all...))},
			map[string]bool{"mid": true},
			[]string{"agent h3 full fastest 305.0 ms (105.0 ms over 2R: the base the other regions are judged by)"}},
		{"without a lossless region, the region's own warm overhead is the base",
			[]Observed{mid, blocked},
			[]model.Group{blockedGroup(handshakes(40, 5, 0, "h2 full"))},
			map[string]bool{"mid": false, "blocked": true},
			[]string{"agent: no runs in the report FAILED", "agent h2 full fastest 3.12R after 0.0 ms, the region's own request overhead (want 3R) ok"}},
		{"a missing handshake fails",
			[]Observed{control, mid},
			[]model.Group{agentGroup("NA", 20, 1.5, handshakes(20, 5, 0, all...)), agentGroup("AS", 100, 1.5, handshakes(100, 5, 0, "h3 full", "h2 full"))},
			map[string]bool{"control": true, "mid": false},
			[]string{"agent h3 0rtt: none FAILED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := SelfCheck{}.Judge(tc.regions, nil, &model.Report{Groups: tc.groups})
			checkVerdicts(t, res, tc.ok, tc.want)
		})
	}
}

// checkVerdicts checks that each region of res passes as ok says and that
// the lines and notes hold every one of want.
func checkVerdicts(t *testing.T, res Result, ok map[string]bool, want []string) {
	t.Helper()
	all := append([]string{}, res.Lines...)
	for _, v := range res.Regions {
		if v.Pass != ok[v.Region] {
			t.Errorf("%s: pass %v, want %v: %s", v.Region, v.Pass, ok[v.Region], strings.Join(v.Notes, "; "))
		}
		all = append(all, v.Notes...)
	}
	text := strings.Join(all, "\n")
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("lacks %q in:\n%s", w, text)
		}
	}
}
