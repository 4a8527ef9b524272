package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/render/internal/dashbuild"
	"github.com/h3rum/h3rum/queries/synth"
)

// TestDashboardAssetsFresh rebuilds the dashboard's script and style sheet
// and fails when queries/render/assets is not what go generate
// ./queries/render would write now. It needs queries/render/web's npm
// packages (npm ci there) and skips without them: go build and go test
// never need npm.
func TestDashboardAssetsFresh(t *testing.T) {
	out, err := dashbuild.Build("web")
	if errors.Is(err, dashbuild.ErrNoModules) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"dashboard.js": out.JS, "dashboard.css": out.CSS} {
		got, err := assets.ReadFile("assets/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("assets/%s is stale: run go generate ./queries/render (after npm ci in queries/render/web)", name)
		}
	}
}

var dashDataRE = regexp.MustCompile(`(?s)<script type="application/json" id="dash-data">(.*?)</script>`)

// TestDashboardBudget holds the dashboard's budget: its script (the map's
// countries inside it), style sheet, the data the page carries for the
// charts and the report by country the map fetches from /api/report on a
// page of another grouping ≤ 200 KB gzipped in all, over a report by
// country (the most groups a map draws). A page by country draws its map
// from its own data, so this counts that data twice: an upper bound.
func TestDashboardBudget(t *testing.T) {
	const budget = 200 << 10
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 5, Runs: 3000}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := model.Options{Since: testSince, Until: testUntil, By: "country", Replicates: 200}
	rep, err := queries.Run(ctx, conn, o)
	if err != nil {
		t.Fatal(err)
	}
	page, err := renderDashboard(rep, &o, false)
	if err != nil {
		t.Fatal(err)
	}
	m := dashDataRE.FindSubmatch(page)
	if m == nil {
		t.Fatal("the page carries no chart data")
	}
	js, _ := assets.ReadFile("assets/dashboard.js")
	css, _ := assets.ReadFile("assets/dashboard.css")
	mapData, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{"script": dashbuild.GzipSize(js), "style sheet": dashbuild.GzipSize(css), "data": dashbuild.GzipSize(m[1]),
		"map data": dashbuild.GzipSize(mapData)}
	total := sizes["script"] + sizes["style sheet"] + sizes["data"] + sizes["map data"]
	t.Logf("gzipped: script %d B (%d raw), style sheet %d B, data %d B (%d raw, %d groups), the map's report %d B (%d raw); %d B of %d",
		sizes["script"], len(js), sizes["style sheet"], sizes["data"], len(m[1]), len(rep.Groups), sizes["map data"], len(mapData), total, budget)
	if total > budget {
		t.Errorf("the dashboard is %d bytes gzipped, budget %d", total, budget)
	}
}
