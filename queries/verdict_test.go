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

	"github.com/h3rum/h3rum/queries/model"
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
	window := model.Options{Since: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC)}

	rep, err := Run(context.Background(), conn, window)
	if err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, rep)
	byGroup := map[string]model.Verdict{}
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
	want := map[string]string{"AS": model.VerdictFaster, "EU": model.VerdictNoDifference, "NA": model.VerdictNoDifference, "OC": model.VerdictNotEnoughRuns}
	for _, r := range plant.Regions {
		v := byGroup[r.Continent]
		t.Logf("%s", v.Text)
		if v.Verdict != want[r.Continent] || v.P != 95 {
			t.Errorf("%s: verdict %s at p%g, want %s at p95 (%s)", r.Continent, v.Verdict, v.P, want[r.Continent], v.Text)
			continue
		}
		if v.Verdict == model.VerdictNotEnoughRuns {
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

	// The table opens, under its title line, with the site-wide line, its
	// verdicts and weights, then the groups' verdicts, the largest
	// decided first, then the largest difference (AS 140 ms faster; NA 2.0
	// and EU 0.5 ms, no difference; OC, too few runs).
	var tb bytes.Buffer
	if err := writeTable(&tb, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(tb.String(), "\n")
	if sw := rep.SiteWide; sw == nil || lines[1] != sw.Headline || len(sw.Verdicts) != 3 {
		t.Fatalf("table line 2: %q, want the site-wide line %+v", lines[1], sw)
	}
	for i, v := range rep.SiteWide.Verdicts {
		if lines[2+i] != "  "+v.Text {
			t.Errorf("table line %d: %q, want %q", 3+i, lines[2+i], "  "+v.Text)
		}
	}
	if !strings.HasPrefix(lines[5], "  (each run weighs the same, whatever its group: AS 46.6 %") {
		t.Errorf("table line 6: %q, want the site-wide line's weights", lines[5])
	}
	const first = 7
	order := []string{"AS", "NA", "EU", "OC"}
	for i, g := range order {
		if lines[first+i] != byGroup[g].Text {
			t.Errorf("table line %d: %q, want %q", first+1+i, lines[first+i], byGroup[g].Text)
		}
	}
	if as := lines[first]; !strings.HasPrefix(as, "AS: HTTP/3 faster at p95 by ") || !strings.Contains(as, "(95 % CI ") || !strings.HasSuffix(as, "1 500 runs") {
		t.Errorf("table's first verdict: %q", as)
	}
	if !strings.HasPrefix(lines[first+len(order)], "(verdicts: each group judged at its own 95 % interval") {
		t.Errorf("the verdicts' rule does not follow them: %q", lines[first+len(order)])
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
	page, err := renderDashboard(rep, new(rep.Options()), false)
	if err != nil {
		t.Fatal(err)
	}
	items := regexp.MustCompile(`<li class="verdict [a-z0-9_]+" data-group="([^"]*)" data-verdict="([a-z0-9_]+)">([^<]*)</li>`).FindAllSubmatch(page, -1)
	if len(items) != len(rep.Verdicts) {
		t.Errorf("dashboard shows %d verdicts, the report has %d", len(items), len(rep.Verdicts))
	}
	// The page lists them as the table does: decided first, then the
	// largest difference.
	shown := model.ByEffect(rep.Verdicts)
	for i, m := range items {
		if v := shown[min(i, len(shown)-1)]; string(m[1]) != v.Group || string(m[2]) != v.Verdict || html.UnescapeString(string(m[3])) != v.Text {
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
		if v.P != 50 || v.Verdict != model.VerdictNoDifference {
			t.Errorf("p50, alike everywhere: %s", v.Text)
		}
	}
}
