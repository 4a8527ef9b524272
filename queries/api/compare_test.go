package api

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/render"
	"github.com/h3rum/h3rum/queries/synth"
)

// TestCompareWindows plants a change between two windows: Asia's H3 − H2
// at p95 goes from 0 to −150 ms, Europe's stays 0, and Oceania has too few
// runs in the second. The comparison reads each as planted, over the API
// as in Go.
func TestCompareWindows(t *testing.T) {
	day := changeDay
	conn := plantedChange(t, true)

	after := model.Options{Since: day(2), Until: day(4)}
	c, err := queries.Compare(context.Background(), conn, after, day(0), day(2))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"AS": model.ChangeH3Gained, "EU": model.ChangeNone, "OC": model.ChangeNotEnoughRun}
	check := func(how string, c *model.Comparison) {
		t.Helper()
		if c.P != 95 || len(c.Groups) != 3 || c.Groups[0].Group != "AS" {
			t.Fatalf("%s: p%g, groups %+v: want p95, AS, EU, OC", how, c.P, c.Groups)
		}
		for _, g := range c.Groups {
			t.Logf("%s: %s", how, g.Text)
			if g.Change != want[g.Group] {
				t.Errorf("%s: %s: %s, want %s", how, g.Group, g.Change, want[g.Group])
			}
		}
		as := c.Groups[0]
		if as.ChangeMS == nil || math.Abs(*as.ChangeMS+150) > 30 || *as.CILowMS > *as.ChangeMS || *as.CIHighMS < *as.ChangeMS ||
			*as.CIHighMS >= 0 || as.Before.Verdict != model.VerdictNoDifference || as.After.Verdict != model.VerdictFaster {
			t.Errorf("%s: Asia planted −150 ms: %+v", how, as)
		}
		eu := c.Groups[slices.IndexFunc(c.Groups, func(g model.GroupChange) bool { return g.Group == "EU" })]
		if eu.MDEMS == nil || *eu.MDEMS <= 0 || *eu.CILowMS > 0 || *eu.CIHighMS < 0 {
			t.Errorf("%s: Europe: %+v", how, eu)
		}
		if c.Before.Since != "2025-01-01T00:00:00Z" || c.After.Until != "2025-01-05T00:00:00Z" || c.Before.Design.String() != c.After.Design.String() {
			t.Errorf("%s: windows %+v → %+v", how, c.Before, c.After)
		}
	}
	check("Compare", c)
	var tb strings.Builder
	if err := render.Comparison(&tb, c); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(tb.String()), "\n")
	if len(lines) != 2+len(c.Groups) || !strings.HasPrefix(lines[0], "h3rum comparison at p95: [2025-01-03T00:00:00Z, 2025-01-05T00:00:00Z)") ||
		lines[1] != c.Groups[0].Text || !strings.HasPrefix(lines[1], "AS: HTTP/3 gained ") {
		t.Errorf("table:\n%s", tb.String())
	}

	// Overlapping windows share runs: refused.
	if _, err := queries.Compare(context.Background(), conn, after, day(1), day(3)); !errors.Is(err, model.ErrInvalidOptions) {
		t.Errorf("overlapping windows: %v, want ErrInvalidOptions", err)
	}

	srv := serve(t, &Handler{Conn: conn, Token: testToken})
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	// The default baseline is the window of the same length before.
	resp, body := get(t, srv.URL+"/api/compare?since=2025-01-03T00:00:00Z&until=2025-01-05T00:00:00Z", auth)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/compare: %d %s", resp.StatusCode, body)
	}
	var api model.Comparison
	if err := json.Unmarshal([]byte(body), &api); err != nil {
		t.Fatal(err)
	}
	check("/api/compare", &api)
	for _, c := range []struct{ q, reason string }{
		{"since=2025-01-03T00:00:00Z&until=2025-01-05T00:00:00Z&baseline_since=2025-01-02T00:00:00Z&baseline_until=2025-01-04T00:00:00Z", "overlaps"},
		{"since=2025-01-03T00:00:00Z&until=2025-01-05T00:00:00Z&baseline_since=2025-01-02T00:00:00Z&baseline_until=2025-01-01T00:00:00Z", "is empty"},
		{"since=2025-01-03T00:00:00Z&baseline_until=yesterday-ish", "baseline_until"},
		{"since=2025-01-03T00:00:00Z&baseline_since=a&baseline_since=b", "given 2 times"},
		{"since=2025-01-03T00:00:00Z&bogus=1", "unknown parameter"},
	} {
		resp, body := get(t, srv.URL+"/api/compare?"+c.q, auth)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, c.reason) || strings.Count(body, "\n") != 1 {
			t.Errorf("%s: %d %q, want 400 naming %q in one line", c.q, resp.StatusCode, body, c.reason)
		}
	}
	if resp, _ := get(t, srv.URL+"/api/compare?since=2025-01-03T00:00:00Z", nil); resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Errorf("/api/compare without the token: %d", resp.StatusCode)
	}
}

// changeDay is day d of plantedChange's four: 2025-01-01 + d.
func changeDay(d int) time.Time { return time.Date(2025, 1, 1+d, 0, 0, 0, 0, time.UTC) }

// plantedChange loads two windows of two days each: Asia's H3 − H2 at p95
// goes from 0 to −150 ms, Europe's stays 0; with thin, Oceania has 400 runs
// in the first and 40 in the second.
func plantedChange(t *testing.T, thin bool) driver.Conn {
	t.Helper()
	regions := func(asDiff float64, ocRuns int) []synth.PlantedRegion {
		r := []synth.PlantedRegion{
			{Continent: "AS", Country: "JP", Subdivision: "JP-13", Runs: 1200, MedianMS: 150, DiffMS: asDiff},
			{Continent: "EU", Country: "DE", Subdivision: "DE-BE", Runs: 1000, MedianMS: 30, DiffMS: 0},
		}
		if thin {
			r = append(r, synth.PlantedRegion{Continent: "OC", Country: "AU", Subdivision: "AU-NSW", Runs: ocRuns, MedianMS: 90, DiffMS: 0})
		}
		return r
	}
	var rows []synth.Sample
	for _, p := range []synth.Planted{
		{Seed: 41, P: 95, Start: changeDay(0), Span: 48 * time.Hour, Regions: regions(0, 400)},
		{Seed: 42, P: 95, Start: changeDay(2), Span: 48 * time.Hour, Regions: regions(-150, 40)},
	} {
		r, err := p.Rows()
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	conn := newDB(t)
	load(t, conn, rows)
	return conn
}
