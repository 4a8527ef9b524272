package render

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/h3rum/h3rum/queries/model"
)

// The HTML report is the dashboard's page as one file: its content
// template, with the dashboard's script and style sheet inlined, the
// report's JSON beside the charts' data, and a header that states the
// window instead of the form that would ask a server for another. It is
// meant to be mailed or attached to a ticket and opened from file://, so
// it must fetch nothing: its Content-Security-Policy allows no source at
// all but the two inline elements, by their hashes (no 'unsafe-inline').
var htmlReportTmpl = template.Must(template.Must(dashboardTmpl.Clone()).New("htmlreport").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>h3rum report: HTTP/3 vs HTTP/2 by {{.V.R.By}}, {{time .V.R.Since}} – {{time .V.R.Until}}</title>
<style>{{.CSS}}</style>
</head>
<body data-live="0" data-report="static">
<header>
<h1>HTTP/3 vs HTTP/2 by {{.V.R.By}}</h1>
<p class="meta">{{time .V.R.Since}} – {{time .V.R.Until}} · {{if .V.R.Site}}site {{.V.R.Site}}{{else}}all sites{{end}} · source: {{.V.R.Source}} · {{.V.R.Selection}} · {{.V.R.DesignText}} · {{.V.R.EstimateText}} · {{.V.R.CIText}}</p>
<p class="note">A report written by <code>h3rum report --format html</code>: the dashboard's views over the data in this file, which fetches nothing. The report's JSON is in it (<code>script#h3rum-data</code>, by grouping).</p>
</header>
<main>
{{template "content" .V}}
</main>
<script type="application/json" id="h3rum-data">{{.Reports}}</script>
<script>{{.JS}}</script>
</body>
</html>
`))

// fcTable is one first-contact table of the page.
type fcTable struct {
	By   string
	Rows []model.FirstContactCount
}

// htmlReportCSS is added to the dashboard's style sheet: the live feed's
// section has nothing to show in a file.
const htmlReportCSS = "\n#live-section{display:none}\n"

// htmlReportView is what htmlReportTmpl renders.
type htmlReportView struct {
	V *dashView
	// Reports are inlined as JSON by grouping: the page's, and those its
	// views would fetch (web/src/static.js answers them).
	Reports map[string]*model.Report
	CSP     string
	CSS     template.CSS
	JS      template.JS
}

// HTML writes r as one self-contained HTML page: the dashboard's
// verdicts, tables and charts, its script and style inlined, the report's
// JSON inside, no request to anywhere. more are reports of the same window
// by other groupings that the page's views ask for, inlined beside it: the
// map's, by country, when r is not (without it the map says it has no
// data). Every report must be complete (Run, or Estimate then AddRuns).
func HTML(w io.Writer, r *model.Report, more ...*model.Report) error {
	reports := map[string]*model.Report{r.By: r}
	for _, m := range append([]*model.Report{r}, more...) {
		if !m.Complete() {
			return errors.New("writing the HTML report: it needs a complete report (Run, or Estimate then AddRuns)")
		}
		if m.Since != r.Since || m.Until != r.Until || m.Site != r.Site {
			return fmt.Errorf("writing the HTML report: the report by %s covers another window or site", m.By)
		}
		// The template would write null for the report's JSON, and the
		// page would draw nothing without saying why.
		if err := model.CheckFinite(m); err != nil {
			return fmt.Errorf("writing the HTML report: the report by %s: %w", m.By, err)
		}
		if _, ok := reports[m.By]; !ok {
			reports[m.By] = m
		}
	}
	js, err := assets.ReadFile("assets/dashboard.js")
	if err != nil {
		return fmt.Errorf("writing the HTML report: reading the dashboard's script: %w", err)
	}
	css, err := assets.ReadFile("assets/dashboard.css")
	if err != nil {
		return fmt.Errorf("writing the HTML report: reading the dashboard's style sheet: %w", err)
	}
	css = append(css, htmlReportCSS...)
	// Inlined, the text must not end its element early: the bundle and
	// the style sheet never hold these (esbuild escapes them in strings),
	// and the hashes are of the text as written.
	for _, c := range []struct {
		what, text, end string
	}{{"script", string(js), "</script"}, {"style sheet", string(css), "</style"}} {
		if low := strings.ToLower(c.text); strings.Contains(low, c.end) || strings.Contains(low, "<!--") {
			return fmt.Errorf("writing the HTML report: the dashboard's %s holds %q or \"<!--\" and cannot be inlined", c.what, c.end)
		}
	}
	o := r.Options()
	v := &htmlReportView{
		V:       newDashView(r, &o, false),
		Reports: reports,
		CSP:     htmlReportCSP(js, css),
		CSS:     template.CSS(css),
		JS:      template.JS(js),
	}
	if err := htmlReportTmpl.ExecuteTemplate(w, "htmlreport", v); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	return nil
}

// htmlReportCSP is the page's policy: nothing from anywhere, but the
// inline script and style sheet whose hashes it names.
func htmlReportCSP(js, css []byte) string {
	h := func(b []byte) string {
		s := sha256.Sum256(b)
		return "'sha256-" + base64.StdEncoding.EncodeToString(s[:]) + "'"
	}
	return "default-src 'none'; script-src " + h(js) + "; style-src " + h(css) + "; base-uri 'none'; form-action 'none'"
}
