//go:build unix

package api

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/synth"
)

// plantedView is the data set of the dashboard's view tests, over 48
// hours: Asia 150 ms faster at p95 with the same median, but no Asian run
// from hour 20 to hour 30; Europe no different; Oceania too small for
// intervals in the tail.
func plantedView(t *testing.T) []synth.Sample {
	t.Helper()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	as := func(runs int) []synth.PlantedRegion {
		return []synth.PlantedRegion{{Continent: "AS", Country: "JP", Subdivision: "JP-13", Runs: runs, MedianMS: 150, DiffMS: -150, ASN: plantedASN}}
	}
	var rows []synth.Sample
	for _, c := range []synth.Planted{
		{Seed: 25, P: 95, Start: start, Span: 48 * time.Hour, Regions: []synth.PlantedRegion{
			{Continent: "EU", Country: "DE", Subdivision: "DE-BE", Runs: 2000, MedianMS: 30, DiffMS: 0},
			{Continent: "OC", Country: "AU", Subdivision: "AU-NSW", Runs: 40, MedianMS: 90, DiffMS: -20},
			// A Japanese network that blocks QUIC: its runs fall back to h2.
			{Continent: "AS", Country: "JP", Subdivision: "JP-13", Runs: 150, MedianMS: 150, DiffMS: -150, ASN: blockedASN, BlockUDP: true},
		}},
		{Seed: 26, P: 95, Start: start, Span: trendGapFrom * time.Hour, Regions: as(1600)},
		{Seed: 27, P: 95, Start: start.Add(trendGapTo * time.Hour), Span: (48 - trendGapTo) * time.Hour, Regions: as(1400)},
	} {
		r, err := c.Rows()
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	// In time order, each run's rows together (a run's rows share its time).
	slices.SortStableFunc(rows, func(a, b synth.Sample) int { return a.Time.Compare(b.Time) })
	return rows
}

// plantedView's Japanese runs come from plantedASN, but for 150 from
// blockedASN, whose UDP is blocked.
const plantedASN, blockedASN = 64496, 64500

// The hours [trendGapFrom, trendGapTo) of plantedView have no Asian run
// but for blockedASN's fallbacks.
const trendGapFrom, trendGapTo = 20, 30

const plantedWindow = "since=2025-01-01T00:00:00Z&until=2025-01-03T00:00:00Z"

// plantedServer serves the dashboard over plantedView.
func plantedServer(t *testing.T) string {
	t.Helper()
	if _, err := chromium.Find(""); err != nil {
		t.Fatalf("the dashboard test needs headless Chromium: %v", err)
	}
	conn := newDB(t)
	load(t, conn, plantedView(t))
	return serve(t, &Handler{Conn: conn, Token: testToken}).URL
}

// curveLevels is how many levels the curves of the report by continent
// over plantedView have, as /api/report says.
func curveLevels(t *testing.T, base string) int {
	t.Helper()
	_, body := get(t, base+"/api/report?by=continent&"+plantedWindow, map[string]string{"Authorization": "Bearer " + testToken})
	var rep model.Report
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("/api/report: %v: %s", err, body)
	}
	for _, g := range rep.Groups {
		if g.Curves != nil {
			return len(g.Curves.Levels)
		}
	}
	t.Fatal("/api/report has no curves")
	return 0
}

// distRow is one level of the distribution view's table.
type distRow struct {
	Level  float64  `json:"level"`
	H2, H3 *float64 `json:"-"`
	H2v    float64  `json:"h2"`
	H3v    float64  `json:"h3"`
}

const readDistTable = `[...document.querySelectorAll('#dist-curves tr[data-level]')].map(r => ({
  level: +r.dataset.level, h2: +r.dataset.h2, h3: +r.dataset.h3}))`

// inkOf counts the canvas pixels of a chart near each protocol's colour:
// the curves were drawn, not only their table.
const inkOf = `(() => {
  const c = document.querySelector('%s canvas');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const near = (i, r, g, b) => Math.abs(d[i]-r) + Math.abs(d[i+1]-g) + Math.abs(d[i+2]-b) < 40 && d[i+3] > 200;
  let h2 = 0, h3 = 0;
  for (let i = 0; i < d.length; i += 4) { if (near(i, 0x4e, 0x79, 0xa7)) h2++; if (near(i, 0xf2, 0x8e, 0x2b)) h3++; }
  return {h2, h3};
})()`

func TestDashboardDistributionInChromium(t *testing.T) {
	base := plantedServer(t)
	levels := curveLevels(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, width := range []int{1280, 360} {
		t.Run("w"+itoa(width), func(t *testing.T) {
			tb := openTab(t, ctx, width, 900)
			url := base + "/dashboard?" + plantedWindow + "&token=" + testToken + "#group=AS"
			tb.navigate(url, `document.querySelector('#dist-curves canvas') && document.querySelector('#dist-paired canvas')`)

			// The view is Asia's, as the address says.
			var group, hash string
			tb.eval(`document.getElementById('dist-curves').dataset.group`, &group)
			if group != "AS" {
				t.Errorf("the view shows %q, the address asks for AS", group)
			}
			// The curves part where it was planted: the same median, and
			// H3 150 ms faster at p95.
			var rows []distRow
			tb.eval(readDistTable, &rows)
			at := map[float64]float64{}
			for _, r := range rows {
				at[r.Level] = r.H3v - r.H2v
			}
			if len(rows) != levels {
				t.Fatalf("the table has %d levels, want %d", len(rows), levels)
			}
			if d := at[50]; math.Abs(d) > 6 {
				t.Errorf("AS: H3 − H2 at p50 is %.1f ms, planted 0", d)
			}
			if d := at[95]; math.Abs(d+150) > 25 {
				t.Errorf("AS: H3 − H2 at p95 is %.1f ms, planted −150", d)
			}
			if !(at[99] < at[95] && at[95] < at[75] && at[75] < at[50]+3) {
				t.Errorf("AS: H3 − H2 should widen into the tail: p50 %.1f, p75 %.1f, p95 %.1f, p99 %.1f", at[50], at[75], at[95], at[99])
			}
			var ink struct{ H2, H3 int }
			tb.eval(sprintf(inkOf, "#dist-curves"), &ink)
			if ink.H2 < 100 || ink.H3 < 100 {
				t.Errorf("the curves' canvas has %d H2 and %d H3 pixels", ink.H2, ink.H3)
			}
			// Each chart stays inside its own figure: side by side at 1280 px,
			// one under the other at 360.
			var fit struct{ Curves, Paired, Gap float64 }
			tb.eval(`(() => { const r = (s) => document.querySelector(s).getBoundingClientRect();
			  const c = r('#dist-curves .uplot'), f = r('#dist-curves'), p = r('#dist-paired .uplot'), g = r('#dist-paired');
			  return {curves: c.right - f.right, paired: p.right - g.right, gap: g.top >= f.bottom ? 1e9 : g.left - c.right}; })()`, &fit)
			if fit.Curves > 1 || fit.Paired > 1 || fit.Gap < 0 {
				t.Errorf("charts overflow their figures: curves by %.0f px, paired by %.0f px, the curves reach %.0f px into the paired figure", fit.Curves, fit.Paired, -fit.Gap)
			}
			var bins int
			tb.eval(`document.querySelectorAll('#dist-paired tr[data-runs]').length`, &bins)
			if bins < 5 {
				t.Errorf("the paired distribution has %d bins", bins)
			}
			// At 360 px the page does not scroll sideways; wide tables
			// scroll inside themselves.
			var overflow int
			tb.eval(`document.documentElement.scrollWidth - document.documentElement.clientWidth`, &overflow)
			if overflow > 0 {
				t.Errorf("at %d px the page is %d px too wide", width, overflow)
			}
			tb.screenshot(filepath.Join(artifactDir(t), "dashboard-distribution-"+itoa(width)+".png"))

			// Keyboard: the group is chosen from a focusable control; the
			// address follows and a reload shows the same view.
			tb.eval(`document.getElementById('dist-group').focus()`, nil)
			tb.call("Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "key": "ArrowDown", "code": "ArrowDown", "windowsVirtualKeyCode": 40})
			tb.call("Input.dispatchKeyEvent", map[string]any{"type": "keyUp", "key": "ArrowDown", "code": "ArrowDown", "windowsVirtualKeyCode": 40})
			tb.wait(`document.getElementById('dist-curves').dataset.group === 'EU'`)
			tb.eval(`location.hash`, &hash)
			if hash != "#group=EU" {
				t.Errorf("after choosing EU the address's fragment is %q", hash)
			}
			tb.navigate("about:blank", "true")
			tb.navigate(base+"/dashboard?"+plantedWindow+"#group=EU", `document.querySelector('#dist-curves canvas')`)
			tb.eval(`document.getElementById('dist-curves').dataset.group`, &group)
			if group != "EU" {
				t.Errorf("reloaded with #group=EU, the view shows %q", group)
			}
			tb.eval(readDistTable, &rows)
			for _, r := range rows {
				if r.Level == 95 && math.Abs(r.H3v-r.H2v) > 8 {
					t.Errorf("EU: H3 − H2 at p95 is %.1f ms, planted 0", r.H3v-r.H2v)
				}
			}
			for _, p := range tb.problems() {
				t.Errorf("page: %s", p)
			}
		})
	}
}

// A network that blocks QUIC shows where it is: drilled into Japan by
// ASN, its HTTP/3 availability is 0 % beside the other network's 100 %,
// its runs are left out of the headline as fallbacks, and Japan's own
// availability on the world page counts them.
func TestDashboardBlockedASNInChromium(t *testing.T) {
	base := plantedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tb := openTab(t, ctx, 1280, 900)
	tb.navigate(base+"/dashboard?"+plantedWindow+"&country=JP&by=asn&token="+testToken, `!document.getElementById('computing') && document.querySelector('#verdicts')`)
	var shares map[string]float64
	tb.eval(`Object.fromEntries([...document.querySelectorAll('#availability td[data-pct=share]')].map(td => [td.dataset.group, +td.dataset.value]))`, &shares)
	blocked, good := "AS"+itoa(blockedASN), "AS"+itoa(plantedASN)
	if s, ok := shares[blocked]; !ok || s != 0 {
		t.Errorf("the blocked network's availability: %v (present %v), want 0; all: %v", s, ok, shares)
	}
	if s := shares[good]; s != 1 {
		t.Errorf("the other network's availability: %v, want 1; all: %v", s, shares)
	}
	var notes string
	tb.eval(`[...document.querySelectorAll('.excluded')].map(p => p.textContent).join(' | ')`, &notes)
	if !strings.Contains(notes, blocked) || !strings.Contains(notes, "fallback 150") {
		t.Errorf("the excluded runs do not name the blocked network's 150 fallbacks: %q", notes)
	}
	// Its verdict says that more runs will not help, not "not enough runs yet".
	var verdict struct{ Verdict, Text string }
	tb.eval(`(() => { const li = document.querySelector('#verdicts li[data-group="`+blocked+`"]'); return li ? {verdict: li.dataset.verdict, text: li.textContent} : {}; })()`, &verdict)
	if verdict.Verdict != model.VerdictNoHTTP3 || !strings.Contains(verdict.Text, "HTTP/3 never used: none of 150 runs' H3 batches") {
		t.Errorf("the blocked network's verdict: %+v", verdict)
	}
	tb.screenshot(filepath.Join(artifactDir(t), "dashboard-blocked-asn.png"))
}
