//go:build unix

package api

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"
)

// trendRow is one window of the over-time view's table.
type trendRow struct {
	Window string   `json:"window"`
	State  string   `json:"state"`
	MS     *float64 `json:"ms"`
}

const readTrendTable = `[...document.querySelectorAll('#trend-diff tr[data-window]')].map(r => ({
  window: r.dataset.window, state: r.dataset.state, ms: r.dataset.ms === undefined ? null : +r.dataset.ms}))`

// greyOf counts the over-time chart's pixels shaded as windows with too
// few runs.
const greyOf = `(() => {
  const c = document.querySelector('#trend-diff canvas');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i+3] > 0 && d[i+3] < 90 && Math.abs(d[i]-150) < 12 && d[i] === d[i+1]) n++;
  return n;
})()`

// TestDashboardTrendInChromium: over plantedView, Asia's H3 − H2 per hour
// at p50 is about 0 where it has runs, and the hours without Asian runs
// are gaps, shaded; at p95 no hour has the runs for an interval, and the
// view says so rather than draw a line.
func TestDashboardTrendInChromium(t *testing.T) {
	base := plantedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tb := openTab(t, ctx, 1280, 900)
	tb.navigate(base+"/dashboard?"+plantedWindow+"&token="+testToken+"#group=AS&p=50", `document.querySelector('#trend-diff canvas')`)
	var rows []trendRow
	tb.eval(readTrendTable, &rows)
	if len(rows) != 48 {
		t.Fatalf("the trend has %d hours, want 48", len(rows))
	}
	for i, r := range rows {
		gap := i >= trendGapFrom && i < trendGapTo
		switch {
		case gap && (r.State != "insufficient" || r.MS != nil):
			t.Errorf("hour %d (%s) has no Asian run, drawn as %s %v", i, r.Window, r.State, r.MS)
		case !gap && r.State != "ok":
			t.Errorf("hour %d (%s): %s, want an estimate", i, r.Window, r.State)
		case !gap && math.Abs(*r.MS) > 20:
			t.Errorf("hour %d: H3 − H2 at p50 is %.1f ms, planted 0", i, *r.MS)
		}
	}
	var grey int
	tb.eval(greyOf, &grey)
	if grey < 1000 {
		t.Errorf("the gaps are not shaded: %d grey pixels", grey)
	}
	var availability int
	tb.eval(`document.querySelectorAll('#trend-availability canvas').length`, &availability)
	if availability != 1 {
		t.Errorf("no availability chart beside the trend")
	}
	tb.screenshot(filepath.Join(artifactDir(t), "dashboard-trend.png"))

	// p95 from the percentile control: no hour has 300 Asian runs.
	tb.eval(`(() => { const s = document.getElementById('trend-p'); s.value = '95'; s.dispatchEvent(new Event('change')); })()`, nil)
	tb.wait(`document.getElementById('trend-diff').dataset.p === '95'`)
	var hash string
	tb.eval(`location.hash`, &hash)
	if hash != "#group=AS&p=95" {
		t.Errorf("after choosing p95 the fragment is %q", hash)
	}
	tb.eval(readTrendTable, &rows)
	for i, r := range rows {
		if r.State != "insufficient" || r.MS != nil {
			t.Errorf("hour %d at p95: %s %v, but no hour has the runs for an interval", i, r.State, r.MS)
		}
	}
	for _, p := range tb.problems() {
		t.Errorf("page: %s", p)
	}
}
