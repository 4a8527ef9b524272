//go:build unix

package api

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/queries/synth"
)

// plantedMap is the map test's data set: Japan 150 ms faster over HTTP/3
// at p95, the United States 120 ms slower, Germany no different, and
// Australia too thin for an interval.
func plantedMap(t *testing.T) []synth.Sample {
	t.Helper()
	rows, err := synth.Planted{Seed: 41, P: 95, Regions: []synth.PlantedRegion{
		{Continent: "AS", Country: "JP", Subdivision: "JP-13", Runs: 1000, MedianMS: 150, DiffMS: -150},
		{Continent: "AS", Country: "JP", Subdivision: "JP-27", Runs: 500, MedianMS: 150, DiffMS: -150},
		{Continent: "NA", Country: "US", Subdivision: "US-CA", Runs: 1500, MedianMS: 80, DiffMS: 120},
		{Continent: "EU", Country: "DE", Subdivision: "DE-BE", Runs: 1500, MedianMS: 30, DiffMS: 0},
		{Continent: "OC", Country: "AU", Subdivision: "AU-NSW", Runs: 25, MedianMS: 90, DiffMS: -20},
	}}.Rows()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(rows, func(a, b synth.Sample) int { return a.Time.Compare(b.Time) })
	return rows
}

// ColorBrewer's PuOr in eight classes, as the map shades: the first four
// HTTP/3 faster (orange), the last four slower (purple).
var puOr8 = []string{"#b35806", "#e08214", "#fdb863", "#fee0b6", "#d8daeb", "#b2abd2", "#8073ac", "#542788"}

type mapCountry struct {
	State string `json:"state"`
	Fill  string `json:"fill"`
	Label string `json:"label"`
	Tab   string `json:"tab"`
}

const readMap = `Object.fromEntries([...document.querySelectorAll('#map-svg path.country[data-country]')].map(p =>
  [p.dataset.country, {state: p.dataset.state, fill: p.getAttribute('fill'), label: p.getAttribute('aria-label'), tab: p.getAttribute('tabindex')}]))`

const mapReady = `document.querySelector('#map-svg path[data-country="JP"][data-state]') && /countries with runs/.test(document.getElementById('map-status').textContent)`

func key(tb *tab, k string, code int) {
	for _, typ := range []string{"keyDown", "keyUp"} {
		tb.call("Input.dispatchKeyEvent", map[string]any{"type": typ, "key": k, "code": k, "windowsVirtualKeyCode": code})
	}
}

// back goes one entry back in the tab's history, as the back button does.
func back(tb *tab) {
	tb.t.Helper()
	var h struct {
		CurrentIndex int `json:"currentIndex"`
		Entries      []struct {
			ID int `json:"id"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(tb.call("Page.getNavigationHistory", nil), &h); err != nil || h.CurrentIndex < 1 {
		tb.t.Fatalf("history: %+v %v", h, err)
	}
	tb.call("Page.navigateToHistoryEntry", map[string]any{"entryId": h.Entries[h.CurrentIndex-1].ID})
}

func TestDashboardMapInChromium(t *testing.T) {
	if _, err := chromium.Find(""); err != nil {
		t.Fatalf("the map test needs headless Chromium: %v", err)
	}
	conn := newDB(t)
	load(t, conn, plantedMap(t))
	base := serve(t, &Handler{Conn: conn, Token: testToken}).URL
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, width := range []int{1280, 360} {
		t.Run("w"+itoa(width), func(t *testing.T) {
			tb := openTab(t, ctx, width, 900)
			// Focus events fire in a page that is not the window's focus.
			tb.call("Emulation.setFocusEmulationEnabled", map[string]any{"enabled": true})
			tb.navigate(base+"/dashboard?"+plantedWindow+"&token="+testToken, mapReady)
			var m map[string]mapCountry
			tb.eval(readMap, &m)
			orange, purple := puOr8[:4], puOr8[4:]
			for _, c := range []struct {
				code, state string
				fills       []string
				words       string
			}{
				{"JP", "faster", orange, "HTTP/3 faster"},
				{"US", "slower", purple, "HTTP/3 slower"},
				{"AU", "thin", []string{"url(#map-hatch)"}, "too few runs"},
			} {
				got := m[c.code]
				if got.State != c.state || !slices.Contains(c.fills, got.Fill) || !strings.Contains(got.Label, c.words) || got.Tab != "0" {
					t.Errorf("%s: %+v, want state %s, a fill of %v, %q in its label, focusable", c.code, got, c.state, c.fills, c.words)
				}
			}
			if l := m["JP"].Label; !strings.Contains(l, "95 % CI") || !regexp.MustCompile(`; 1[45]\d\d runs;`).MatchString(l) || !strings.Contains(l, "HTTP/3 availability") {
				t.Errorf("JP's label lacks its interval, runs or availability: %s", l)
			}
			// The text alternative: the same figures in a table.
			var rows map[string]string
			tb.eval(`Object.fromEntries([...document.querySelectorAll('#map-table tr[data-country]')].map(r => [r.dataset.country, r.dataset.state]))`, &rows)
			if rows["JP"] != "faster" || rows["US"] != "slower" || rows["AU"] != "thin" || rows["DE"] != m["DE"].State {
				t.Errorf("the map's table: %v", rows)
			}
			if fr := m["FR"]; fr.State != "none" || fr.Tab != "-1" {
				t.Errorf("FR has no runs: %+v", fr)
			}

			// Keyboard: a focused country shows its tooltip; the arrow keys
			// move to a neighbour; Enter drills into the focused country.
			tb.eval(`document.querySelector('#map-svg path[data-country="JP"]').focus()`, nil)
			var tip string
			tb.eval(`document.getElementById('map-tip').hidden ? '' : document.getElementById('map-tip').textContent`, &tip)
			if !strings.Contains(tip, "Japan (JP)") || !strings.Contains(tip, "HTTP/3 faster") {
				t.Errorf("the focused JP's tooltip reads %q", tip)
			}
			key(tb, "ArrowLeft", 37)
			var moved string
			tb.eval(`document.activeElement.dataset.name || ''`, &moved)
			if moved == "" || moved == "Japan" {
				t.Errorf("ArrowLeft from Japan focused %q", moved)
			}
			tb.screenshot(filepath.Join(artifactDir(t), "dashboard-map-"+itoa(width)+".png"))
			var overflow int
			tb.eval(`document.documentElement.scrollWidth - document.documentElement.clientWidth`, &overflow)
			if overflow > 0 {
				t.Errorf("at %d px the page is %d px too wide", width, overflow)
			}
			tb.eval(`document.querySelector('#map-svg path[data-country="JP"]').focus()`, nil)
			key(tb, "Enter", 13)
			tb.wait(`location.search.includes('country=JP') && document.querySelector('#map-svg path.selected') && ` + mapReady)
			var loc struct{ Search, Hash, H1, Crumbs, ViewBox string }
			const readLoc = `({search: location.search, hash: location.hash, h1: document.querySelector('h1').textContent,
  crumbs: document.getElementById('crumbs').textContent, viewBox: document.getElementById('map-svg').getAttribute('viewBox')})`
			tb.eval(readLoc, &loc)
			q, _ := url.ParseQuery(strings.TrimPrefix(loc.Search, "?"))
			h, _ := url.ParseQuery(strings.TrimPrefix(loc.Hash, "#"))
			if q.Get("by") != "subdivision" || q.Get("country") != "JP" || h.Get("view") != "map" || !strings.Contains(loc.H1, "in JP") ||
				!strings.Contains(loc.Crumbs, "World") || !strings.Contains(loc.Crumbs, "country JP") || loc.ViewBox == "0 0 960 470" {
				t.Errorf("after Enter on JP: %+v", loc)
			}
			var groups []string
			tb.eval(`[...new Set([...document.querySelectorAll('#report tr[data-group]')].map(r => r.dataset.group))]`, &groups)
			if slices.Sort(groups); !slices.Equal(groups, []string{"JP-13", "JP-27"}) {
				t.Errorf("JP's drill-down shows the groups %v", groups)
			}
			tb.screenshot(filepath.Join(artifactDir(t), "dashboard-map-JP-"+itoa(width)+".png"))

			// The percentile is the fragment's: a change is a history entry.
			tb.eval(`(() => { const s = document.getElementById('map-p'); s.value = '50'; s.dispatchEvent(new Event('change')); })()`, nil)
			tb.wait(`document.getElementById('map-svg').dataset.p === '50' && location.hash.includes('p=50')`)
			var href string
			tb.eval(`location.href`, &href)
			// The address round-trips: loaded afresh, it shows the same view.
			tb.navigate("about:blank", "true")
			tb.navigate(href, mapReady+` && document.querySelector('#map-svg path.selected')`)
			var again struct{ Search, Hash, H1, Crumbs, ViewBox string }
			tb.eval(readLoc, &again)
			var p string
			tb.eval(`document.getElementById('map-svg').dataset.p + ' ' + document.getElementById('map-p').value`, &p)
			if again.Search != loc.Search || again.H1 != loc.H1 || again.ViewBox != loc.ViewBox || p != "50 50" {
				t.Errorf("reloaded %s: %+v, p %s; before %+v", href, again, p, loc)
			}
			// Back, as the browser's button does: the reloaded view, the
			// same at p95, then the world page.
			back(tb)
			tb.wait(`location.href === 'about:blank'`)
			back(tb)
			tb.wait(`location.hash.includes('p=50') && ` + mapReady)
			back(tb)
			tb.wait(`!location.hash.includes('p=50') && document.getElementById('map-svg').dataset.p === '95' && document.getElementById('map-p').value === '95'`)
			back(tb)
			tb.wait(`!location.search.includes('country=') && ` + mapReady)
			var crumbs string
			tb.eval(`document.getElementById('crumbs').textContent`, &crumbs)
			if strings.Contains(crumbs, "country JP") {
				t.Errorf("back on the world page, the breadcrumb reads %q", crumbs)
			}
			// A continent: its countries on the map, zoomed to them, drawn
			// from the page's own report by country.
			tb.eval(`[...document.querySelectorAll('#crumbs .drill a')].find(a => a.textContent === 'Asia (AS) by country').click()`, nil)
			tb.wait(`location.search.includes('continent=AS') && ` + mapReady)
			tb.eval(readMap, &m)
			tb.eval(readLoc, &loc)
			if m["JP"].State != "faster" || m["US"].State != "none" || loc.ViewBox == "0 0 960 470" || !strings.Contains(loc.Crumbs, "Asia (AS)") ||
				!strings.Contains(loc.H1, "by country in Asia") {
				t.Errorf("Asia by country: JP %+v, US %+v, %+v", m["JP"], m["US"], loc)
			}
			for _, p := range tb.problems() {
				t.Errorf("page: %s", p)
			}
		})
	}
}
