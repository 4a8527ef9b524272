package queries

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/params"
	"github.com/h3rum/h3rum/queries/query"
	"github.com/h3rum/h3rum/queries/synth"
)

func TestPlaceOptions(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	o, err := params.OptionsFromValues(url.Values{"continent": {"as"}, "country": {"jp"}, "by": {"subdivision"}}, now)
	if err != nil || o.Continent != "AS" || o.Country != "JP" {
		t.Fatalf("continent=as&country=jp: %q %q, %v", o.Continent, o.Country, err)
	}
	w := query.NewWindow(now.Add(-time.Hour), now, now)
	if st, err := prepare("points_raw.sql", &o, w, nil); err != nil || !strings.Contains(st.SQL, " AND continent = @continent AND country = @country)") {
		t.Errorf("the filter is not in the design's block: %v\n%s", err, st.SQL)
	}
	back, err := params.OptionsFromValues(params.Values(&o), now)
	if err != nil || back.Continent != "AS" || back.Country != "JP" {
		t.Errorf("values round trip: %q %q, %v", back.Continent, back.Country, err)
	}
	d, _ := params.OptionsFromValues(url.Values{}, now)
	if st, err := prepare("points_raw.sql", &d, w, nil); err != nil || params.Values(&d).Has("country") || params.Values(&d).Has("continent") || strings.Contains(st.SQL, "country") {
		t.Errorf("no filter by default: %v, %v\n%s", params.Values(&d), err, st.SQL)
	}
	for _, v := range []url.Values{
		{"country": {"JPN"}}, {"country": {"J"}}, {"country": {"J'"}}, {"country": {"' OR 1=1 --"}}, {"continent": {"Asia"}},
		{"country": {"é1"}}, {"country": {"JP", "FR"}},
	} {
		if _, err := params.OptionsFromValues(v, now); !errors.Is(err, model.ErrInvalidOptions) {
			t.Errorf("%v: err = %v, want ErrInvalidOptions", v, err)
		}
	}
}

// TestPlaceFilter: a report filtered to one country or continent holds that
// place's runs only, the same as its group in the unfiltered report, from
// raw rows and the rollup alike.
func TestPlaceFilter(t *testing.T) {
	conn := newDB(t)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rows, err := synth.Planted{Seed: 31, P: 95, Start: start, Span: 24 * time.Hour, Regions: []synth.PlantedRegion{
		{Continent: "AS", Country: "JP", Subdivision: "JP-13", Runs: 120, MedianMS: 100, DiffMS: -50},
		{Continent: "AS", Country: "JP", Subdivision: "JP-27", Runs: 80, MedianMS: 100, DiffMS: -50},
		{Continent: "AS", Country: "IN", Subdivision: "IN-MH", Runs: 90, MedianMS: 200, DiffMS: -80},
		{Continent: "EU", Country: "DE", Subdivision: "DE-BE", Runs: 150, MedianMS: 30, DiffMS: 0},
	}}.Rows()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(rows, func(a, b synth.Sample) int { return a.Time.Compare(b.Time) })
	load(t, conn, rows)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(o model.Options) map[string]int {
		t.Helper()
		o.Since, o.Until, o.Replicates = start, start.Add(24*time.Hour), 50
		rep, err := Run(ctx, conn, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		// The report says which place it covers.
		if rep.Filters.Continent != o.Continent || rep.Filters.Country != o.Country {
			t.Errorf("%+v: the report's filters say %+v", o, rep.Filters)
		}
		m := map[string]int{}
		for _, g := range rep.Groups {
			m[g.Group] = g.Runs
		}
		// The sections that read every design cover the same place:
		// the designs' runs, first contact's and (no NEL reports here)
		// the place's runs alone.
		designRuns, firstRuns, groupRuns := 0, 0, 0
		for _, d := range rep.Designs {
			designRuns += d.Runs
		}
		if rep.FirstContact != nil {
			for _, b := range rep.FirstContact.Browsers {
				firstRuns += b.Runs
			}
		}
		for _, g := range rep.Groups {
			groupRuns += g.DesignRuns
		}
		if o.Source == model.SourceRaw && (designRuns != groupRuns || firstRuns != groupRuns) {
			t.Errorf("%+v: designs count %d runs, first contact %d, the groups %d", o, designRuns, firstRuns, groupRuns)
		}
		return m
	}
	if all := run(model.Options{By: "country", Source: model.SourceRaw}); all["JP"] != 200 || all["IN"] != 90 || all["DE"] != 150 {
		t.Fatalf("unfiltered by country: %v", all)
	}
	// The rollup counts runs with HyperLogLog: a filtered group's count is
	// the unfiltered one's.
	rolled := run(model.Options{By: "country", Source: model.SourceRollup})
	for _, tc := range []struct {
		name string
		o    model.Options
		want map[string]int
	}{
		{"country by subdivision", model.Options{By: "subdivision", Country: "JP"}, map[string]int{"JP-13": 120, "JP-27": 80}},
		{"country by country, rollup", model.Options{By: "country", Country: "JP", Source: model.SourceRollup}, map[string]int{"JP": rolled["JP"]}},
		{"continent by country, raw", model.Options{By: "country", Continent: "AS", Source: model.SourceRaw}, map[string]int{"JP": 200, "IN": 90}},
		{"continent by country, rollup", model.Options{By: "country", Continent: "AS", Source: model.SourceRollup}, map[string]int{"JP": rolled["JP"], "IN": rolled["IN"]}},
		{"continent and country", model.Options{By: "browser", Continent: "EU", Country: "DE"}, nil},
		{"a country of another continent", model.Options{By: "country", Continent: "EU", Country: "JP"}, map[string]int{}},
	} {
		got := run(tc.o)
		if tc.want == nil { // one browser: every DE run
			n := 0
			for _, r := range got {
				n += r
			}
			if n != 150 {
				t.Errorf("%s: %v, want DE's 150 runs", tc.name, got)
			}
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for g, n := range tc.want {
			if got[g] != n {
				t.Errorf("%s: %s has %d runs, want %d", tc.name, g, got[g], n)
			}
		}
	}
}
