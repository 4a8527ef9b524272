package render

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/params"
	"github.com/h3rum/h3rum/queries/stats"
)

//go:embed assets/dashboard.html assets/dashboard.js assets/dashboard.css
var assets embed.FS

var dashboardTmpl = template.Must(template.New("dashboard.html").Funcs(template.FuncMap{
	"ms":        ms,
	"signed":    func(v float64) string { return signed(v, "") },
	"pct":       func(v float64) string { return signed(v, "%") },
	"share":     share,
	"num":       func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) },
	"ci":        func(lo, hi *float64) string { return ci(lo, hi, "") },
	"cipct":     func(lo, hi *float64) string { return ci(lo, hi, "%") },
	"cishr":     shareCI,
	"time":      func(t time.Time) string { return t.Format("2006-01-02 15:04 UTC") },
	"label":     func(k string) string { return outcomeLabel[k] },
	"rule":      model.SufficiencyText,
	"continent": continentName,
	"fcTable":   func(by string, rows []model.FirstContactCount) fcTable { return fcTable{by, rows} },
	"byEffect":  model.ByEffect,
}).ParseFS(assets, "assets/dashboard.html"))

// Chart colours (Tableau 10): H2 blue, H3 orange, fallback red, other grey.
const (
	colH2       = "#4e79a7"
	colH3       = "#f28e2b"
	colFallback = "#e15759"
	colOther    = "#bab0ac"
	colAxis     = "#555"
)

// chart is an SVG drawing computed in Go and rendered by the template
// with presentation attributes only (no inline style or script).
type chart struct {
	ID, Title string
	W, H      float64
	Rects     []rect
	Lines     []line
	Texts     []text
}

type rect struct {
	X, Y, W, H float64
	Fill       string
	Faded      bool // an estimate with too few runs for an interval
	Tip        string
}

type line struct {
	X1, Y1, X2, Y2 float64
	Stroke         string
}

type text struct {
	X, Y   float64
	S      string
	Anchor string // start, middle, end
}

// dashView is what the template renders.
type dashView struct {
	R         *model.Report
	O         *model.Options
	Query     string
	Groupings []string
	Live      bool
	Complete  bool    // intervals and the paired view are in
	VerdictP  float64 // the percentile the verdicts judge
	Outcomes  []outcomeRow
	Charts    []chart
	// Data is what the script draws its charts from, carried in the page
	// as JSON (complete report only).
	Data *dashData
	// Crumbs lead from the world to the place the page is filtered to;
	// Drill are the views one level down (or beside) from here.
	Crumbs, Drill []crumb
}

// crumb is one link of the drill-down: to the dashboard with other
// options, or (Current) the page itself.
type crumb struct {
	Label, Href string
	Current     bool
}

// continentNames are the continent codes the GeoIP databases give.
var continentNames = map[string]string{"AF": "Africa", "AN": "Antarctica", "AS": "Asia", "EU": "Europe",
	"NA": "North America", "OC": "Oceania", "SA": "South America"}

func continentName(code string) string {
	if n, ok := continentNames[code]; ok {
		return n + " (" + code + ")"
	}
	return code
}

// drillLinks are the breadcrumb and the drill-down links of the page o
// makes: world › continent › country, then the groupings inside the place
// (and, on a page by continent, each continent's countries).
func drillLinks(r *model.Report, o *model.Options) (crumbs, drill []crumb) {
	link := func(continent, country, by string) string {
		c := *o
		c.Continent, c.Country, c.By = continent, country, by
		return "/dashboard?" + params.Query(&c)
	}
	crumbs = append(crumbs, crumb{Label: "World", Href: link("", "", "continent")})
	if o.Continent != "" {
		crumbs = append(crumbs, crumb{Label: continentName(o.Continent), Href: link(o.Continent, "", "country")})
	}
	if o.Country != "" {
		crumbs = append(crumbs, crumb{Label: "country " + o.Country, Href: link(o.Continent, o.Country, "subdivision")})
	}
	crumbs[len(crumbs)-1].Current = true
	bys := []string{"subdivision", "asn", "browser"}
	switch {
	case o.Country == "" && o.Continent == "":
		bys = []string{"continent", "country", "asn", "browser"}
	case o.Country == "":
		bys = []string{"country", "subdivision", "asn", "browser"}
	}
	for _, by := range bys {
		drill = append(drill, crumb{Label: "by " + by, Href: link(o.Continent, o.Country, by), Current: by == o.By})
	}
	if o.By == "continent" && o.Country == "" {
		for _, g := range r.Groups {
			if model.IsPlaceCode(g.Group) {
				drill = append(drill, crumb{Label: continentName(g.Group) + " by country", Href: link(g.Group, "", "country")})
			}
		}
	}
	return crumbs, drill
}

// dashData is the charts' data: the figures of the report they draw,
// under the report's JSON names.
type dashData struct {
	Percentiles []float64       `json:"percentiles"`
	VerdictP    float64         `json:"verdict_p"`
	Groups      []dashGroup     `json:"groups"`
	Verdicts    []model.Verdict `json:"verdicts"`
	Trend       *model.Trend    `json:"trend"`
}

type dashGroup struct {
	Group        string              `json:"group"`
	Runs         int                 `json:"runs"`
	TooSmall     bool                `json:"too_small"`
	H2           *dashStats          `json:"h2"`
	H3           *dashStats          `json:"h3"`
	Diff         []model.Diff        `json:"diff"`
	Curves       *model.Curves       `json:"curves"`
	Paired       *dashPaired         `json:"paired"`
	Availability *model.Availability `json:"h3_availability"`
}

type dashStats struct {
	Runs        int                `json:"runs"`
	Percentiles []model.Percentile `json:"percentiles"`
}

type dashPaired struct {
	Runs      int             `json:"runs"`
	MedianMS  float64         `json:"median_ms"`
	Histogram model.Histogram `json:"histogram"`
}

// newDashData takes the charts' figures from a complete report.
func newDashData(r *model.Report, verdictP float64) *dashData {
	d := &dashData{Percentiles: r.Percentiles, VerdictP: verdictP, Groups: make([]dashGroup, 0, len(r.Groups)), Verdicts: r.Verdicts, Trend: r.Trend}
	stats := func(s *model.Stats) *dashStats {
		if s == nil {
			return nil
		}
		return &dashStats{Runs: s.Runs, Percentiles: s.Percentiles}
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		dg := dashGroup{Group: g.Group, Runs: g.Runs, TooSmall: g.TooSmall, H2: stats(g.H2), H3: stats(g.H3), Diff: g.Diff,
			Curves: g.Curves, Availability: g.Availability}
		if p := g.Paired; p != nil {
			dg.Paired = &dashPaired{Runs: p.Runs, MedianMS: p.MedianMS, Histogram: p.Histogram}
		}
		d.Groups = append(d.Groups, dg)
	}
	return d
}

// outcomeRow is one group × outcome line of the regional table.
type outcomeRow struct {
	G     *model.Group
	Key   string
	S     *model.Stats
	First bool
}

// newDashView prepares what the dashboard template shows of r.
func newDashView(r *model.Report, o *model.Options, live bool) *dashView {
	v := &dashView{R: r, O: o, Query: params.Query(o), Groupings: model.Groupings(), Live: live, Complete: r.Complete(),
		VerdictP: o.VerdictPercentile()}
	for i := range r.Groups {
		g := &r.Groups[i]
		first := true
		for _, x := range g.Outcomes() {
			if x.Stats != nil {
				v.Outcomes = append(v.Outcomes, outcomeRow{G: g, Key: x.Outcome, S: x.Stats, First: first})
				first = false
			}
		}
	}
	v.Crumbs, v.Drill = drillLinks(r, o)
	v.Charts = append(v.Charts, timelineChart(r))
	if r.Complete() {
		v.Data = newDashData(r, v.VerdictP)
	}
	return v
}

// Dashboard is the dashboard's page of one report, as the options that
// asked for it show it, whole (Write) or in the parts a server streams:
// DashboardHead and DashboardMasthead before anything is computed, then
// Header and Content, then Bottom.
type Dashboard struct{ v *dashView }

// NewDashboard prepares the page of r for the options o; live shows the
// live feed's section. The page reads r when it is written, not before.
func NewDashboard(r *model.Report, o *model.Options, live bool) *Dashboard {
	return &Dashboard{newDashView(r, o, live)}
}

// Write writes the whole page.
func (d *Dashboard) Write(w io.Writer) error { return dashboardTmpl.Execute(w, d.v) }

// Header writes the rest of the page's header: the window, the selection
// and the methods.
func (d *Dashboard) Header(w io.Writer) error { return dashboardTmpl.ExecuteTemplate(w, "header", d.v) }

// Content writes the page's verdicts, tables and charts.
func (d *Dashboard) Content(w io.Writer) error {
	return dashboardTmpl.ExecuteTemplate(w, "content", d.v)
}

// Bottom closes the page.
func (d *Dashboard) Bottom(w io.Writer) error { return dashboardTmpl.ExecuteTemplate(w, "bottom", d.v) }

// DashboardHead writes the page's head for a report by by: what the
// browser needs to fetch the style sheet and the script.
func DashboardHead(w io.Writer, by string) error {
	return dashboardTmpl.ExecuteTemplate(w, "head", struct{ By string }{by})
}

// DashboardMasthead writes the page's heading, which needs no report: the
// grouping and the links of o.
func DashboardMasthead(w io.Writer, o *model.Options, live bool) error {
	return dashboardTmpl.ExecuteTemplate(w, "masthead", &dashView{R: &model.Report{By: o.By}, O: o, Live: live})
}

// DashboardFailed ends a page whose report failed, saying why.
func DashboardFailed(w io.Writer, reason string) error {
	return dashboardTmpl.ExecuteTemplate(w, "failed", reason)
}

// Asset returns the dashboard's built script ("dashboard.js") or style
// sheet ("dashboard.css"), which the page links.
func Asset(name string) ([]byte, error) {
	if name != "dashboard.js" && name != "dashboard.css" {
		return nil, fmt.Errorf("the dashboard has no asset %q", name)
	}
	return assets.ReadFile("assets/" + name)
}

// niceMax rounds a scale maximum up to 1, 2 or 5 × 10^k.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	return stats.NiceStep(v)
}

// axes draws a y axis with five ticks and the baseline.
func axes(c *chart, x0, y0, x1, y1, scaleMax float64, y func(float64) float64, unit string) {
	c.Lines = append(c.Lines, line{x0, y1, x1, y1, colAxis}, line{x0, y0, x0, y1, colAxis})
	for i := 0; i <= 4; i++ {
		v := scaleMax * float64(i) / 4
		c.Lines = append(c.Lines, line{x0 - 4, y(v), x0, y(v), colAxis})
		c.Texts = append(c.Texts, text{X: x0 - 6, Y: y(v) + 4, S: strconv.FormatFloat(v, 'f', -1, 64), Anchor: "end"})
	}
	c.Texts = append(c.Texts, text{X: x0 - 6, Y: y0 - 10, S: unit, Anchor: "end"})
}

// timelineChart stacks samples per hour by outcome.
func timelineChart(r *model.Report) chart {
	const left, top, bottom, right = 50.0, 24.0, 30.0, 10.0
	c := chart{ID: "chart-timeline", Title: "Samples per hour: h2, h3, wanted h3 got h2, other", W: 900, H: 200}
	hours := r.Timeline
	// Bars span the whole window, one slot per hour, empty hours included.
	first := r.Since.Truncate(time.Hour)
	n := int(math.Ceil(r.Until.Sub(first).Hours()))
	n = min(max(n, 1), 24*90)
	peak := 0
	for _, h := range hours {
		peak = max(peak, h.H2+h.H3+h.WantedH3GotH2+h.Other)
	}
	scaleMax := niceMax(float64(peak))
	plotW, plotH := c.W-left-right, c.H-top-bottom
	slot := plotW / float64(n)
	y := func(v float64) float64 { return top + plotH*(1-v/scaleMax) }
	axes(&c, left, top, c.W-right, c.H-bottom, scaleMax, y, "samples")
	for _, h := range hours {
		i := int(h.Hour.Sub(first).Hours())
		if i < 0 || i >= n {
			continue
		}
		x := left + float64(i)*slot
		acc := 0.0
		for _, part := range []struct {
			n    int
			fill string
		}{{h.H2, colH2}, {h.H3, colH3}, {h.WantedH3GotH2, colFallback}, {h.Other, colOther}} {
			if part.n == 0 {
				continue
			}
			y0, y1 := y(acc), y(acc+float64(part.n))
			c.Rects = append(c.Rects, rect{X: x, Y: y1, W: math.Max(slot-1, 0.5), H: y0 - y1, Fill: part.fill,
				Tip: fmt.Sprintf("%s: %d", h.Hour.Format("2006-01-02 15:00"), part.n)})
			acc += float64(part.n)
		}
	}
	c.Texts = append(c.Texts, text{X: left, Y: c.H - 10, S: first.Format("2006-01-02 15:00"), Anchor: "start"},
		text{X: c.W - right, Y: c.H - 10, S: r.Until.Format("2006-01-02 15:04"), Anchor: "end"})
	return c
}
