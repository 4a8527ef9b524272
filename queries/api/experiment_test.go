package api

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/synth"
)

// TestExperimentDashboardInChromium reads an experiment's dashboard ten
// times as its runs arrive, an hour of them between looks, as an operator
// watching it would: Europe, planted with no difference, is never shown
// faster or slower at any look; Asia, planted 150 ms faster at p95, is
// decided faster by the last; and the site-wide line comes first at every
// look once there are runs.
func TestExperimentDashboardInChromium(t *testing.T) {
	if _, err := chromium.Find(""); err != nil {
		t.Fatalf("the dashboard test needs headless Chromium: %v", err)
	}
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	const looks = 10
	rows, err := synth.Planted{Seed: 48, P: 95, Start: start, Span: looks * time.Hour, Regions: []synth.PlantedRegion{
		{Continent: "EU", Country: "DE", Subdivision: "DE-BE", Runs: 1500, MedianMS: 30, DiffMS: 0},
		{Continent: "AS", Country: "JP", Subdivision: "JP-13", Runs: 1500, MedianMS: 150, DiffMS: -150},
	}}.Rows()
	if err != nil {
		t.Fatal(err)
	}
	conn := newDB(t)
	base := serve(t, &Handler{Conn: conn, Token: testToken}).URL
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tb := openTab(t, ctx, 1280, 900)
	url := fmt.Sprintf("%s/dashboard?since=%s&until=%s&experiment=1&token=%s", base,
		start.Format(time.RFC3339), start.Add(looks*time.Hour).Format(time.RFC3339), testToken)
	var last map[string]string
	for look := range looks {
		var hour []synth.Sample
		for _, r := range rows {
			if h := int(r.Time.Sub(start) / time.Hour); h == look {
				hour = append(hour, r)
			}
		}
		load(t, conn, hour)
		tb.navigate(url, `!document.getElementById('computing') && document.querySelector('#verdicts')`)
		var verdicts map[string]string
		tb.eval(`Object.fromEntries([...document.querySelectorAll('#verdicts li')].map(li => [li.dataset.group, li.dataset.verdict]))`, &verdicts)
		var site struct {
			Headline string
			P95      string
			First    bool
		}
		tb.eval(`(() => { const s = document.getElementById('site-wide'), v = document.getElementById('verdicts');
			const li = s && s.querySelector('li[data-p="95"]');
			return {headline: s ? s.querySelector('#site-headline').textContent : '', p95: li ? li.dataset.verdict : '',
				first: !!s && !!(s.compareDocumentPosition(v) & Node.DOCUMENT_POSITION_FOLLOWING)}; })()`, &site)
		t.Logf("look %d (%d hours of runs): %v; all visitors at p95: %s", look+1, look+1, verdicts, site.P95)
		if v := verdicts["EU"]; v == model.VerdictFaster || v == model.VerdictSlower {
			t.Errorf("look %d: Europe, planted with no difference, shown %s", look+1, v)
		}
		if site.Headline == "" || !site.First {
			t.Errorf("look %d: the site-wide line %q, before the regions %v", look+1, site.Headline, site.First)
		}
		last = verdicts
	}
	var asText string
	tb.eval(`document.querySelector('#verdicts li[data-group="AS"]').textContent`, &asText)
	if !strings.Contains(asText, "(experiment: anytime-valid 95 % CI ") {
		t.Errorf("Asia's verdict %q does not say it holds at any look", asText)
	}
	if v := last["AS"]; v != model.VerdictFaster {
		t.Errorf("after %d looks Asia, planted 150 ms faster at p95, is %q, want decided %s", looks, v, model.VerdictFaster)
	}
	tb.screenshot(filepath.Join(artifactDir(t), "dashboard-experiment.png"))
}
