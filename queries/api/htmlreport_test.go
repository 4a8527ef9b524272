//go:build unix

package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	stdhtml "html"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/render"
)

// TestHTMLReportOffline writes the HTML report over the planted data set
// (Asia faster at p95), opens the file in headless Chromium with the
// network off, and checks that the page fetched nothing, logged no error
// or CSP violation, drew the dashboard's charts and its map (from the
// report by country it carries), and shows the verdicts
// and the first-contact counts of the JSON report it carries, which are
// the report's.
func TestHTMLReportOffline(t *testing.T) {
	if _, err := chromium.Find(""); err != nil {
		t.Fatalf("the HTML report test needs headless Chromium: %v", err)
	}
	conn := newDB(t)
	load(t, conn, plantedView(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := model.Options{Since: start, Until: start.Add(48 * time.Hour), By: "continent", MinRuns: 30}
	rep, err := queries.Run(ctx, conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.By = "country" // the map's
	byCountry, err := queries.Run(ctx, conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := render.HTML(&page, rep, byCountry); err != nil {
		t.Fatal(err)
	}
	html := page.String()

	// The policy names the hashes of the inline script and style sheet,
	// and allows nothing else.
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]+)">`).FindStringSubmatch(html)
	if csp == nil {
		t.Fatal("the page has no CSP meta tag")
	}
	policy := stdhtml.UnescapeString(csp[1])
	for _, re := range []string{`(?s)<script>(.*?)</script>`, `(?s)<style>(.*?)</style>`} {
		m := regexp.MustCompile(re).FindStringSubmatch(html)
		if m == nil {
			t.Fatalf("the page has no %s", re)
		}
		sum := sha256.Sum256([]byte(m[1]))
		if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(policy, h) {
			t.Errorf("the policy %q does not name the inline element's hash %s", policy, h)
		}
	}
	if !strings.HasPrefix(policy, "default-src 'none';") || strings.Contains(policy, "unsafe-inline") {
		t.Errorf("policy %q", policy)
	}

	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifactDir(t), "html-report.html"), page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fileURL := (&url.URL{Scheme: "file", Path: file}).String()

	for _, width := range []int{1280, 360} {
		t.Run("w"+itoa(width), func(t *testing.T) {
			tb := openTab(t, ctx, width, 900)
			tb.call("Network.enable", nil)
			tb.call("Network.emulateNetworkConditions", map[string]any{"offline": true, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
			// The map of a report by continent draws from the report by
			// country the file carries (mapReady: map_test.go).
			tb.navigate(fileURL+"#group=AS", `document.querySelector('#dist-curves canvas') && document.querySelector('#dist-paired canvas') && document.querySelector('#trend canvas') && `+mapReady)

			var loaded struct {
				Resources  []string `json:"resources"`
				Navigation []string `json:"navigation"`
			}
			tb.eval(`({resources: performance.getEntriesByType('resource').map(e => e.name),
			  navigation: performance.getEntriesByType('navigation').map(e => e.name)})`, &loaded)
			if len(loaded.Resources) != 0 || len(loaded.Navigation) != 1 || !strings.HasPrefix(loaded.Navigation[0], fileURL) {
				t.Errorf("the page loaded %v after %v, want nothing after the file itself", loaded.Resources, loaded.Navigation)
			}
			if p := tb.problems(); len(p) > 0 {
				t.Errorf("console errors or CSP violations:\n%s", strings.Join(p, "\n"))
			}

			// The verdicts on the page are the report's, and those of the
			// JSON the page carries.
			type shown struct {
				Group   string `json:"group"`
				Verdict string `json:"verdict"`
				Text    string `json:"text"`
			}
			var dom, carried, want []shown
			tb.eval(`[...document.querySelectorAll('#verdicts li')].map(li => ({group: li.dataset.group, verdict: li.dataset.verdict, text: li.textContent}))`, &dom)
			tb.eval(`JSON.parse(document.getElementById('h3rum-data').textContent).continent.verdicts.map(v => ({group: v.group, verdict: v.verdict, text: v.text}))`, &carried)
			// The JSON keeps the groups' order; the page lists them decided
			// first, then the largest difference, as the table does.
			var onPage []shown
			for _, v := range rep.Verdicts {
				want = append(want, shown{v.Group, v.Verdict, v.Text})
			}
			for _, v := range model.ByEffect(rep.Verdicts) {
				onPage = append(onPage, shown{v.Group, v.Verdict, v.Text})
			}
			if !reflect.DeepEqual(dom, onPage) || !reflect.DeepEqual(carried, want) {
				t.Errorf("verdicts on the page %+v,\nin its JSON %+v,\nwant %+v and %+v", dom, carried, onPage, want)
			}
			// A file has no server to drill into: no link leads to one,
			// while the map's countries are drawn.
			var serverLinks, countries int
			tb.eval(`[...document.querySelectorAll('a[href^="/"]')].length`, &serverLinks)
			tb.eval(`document.querySelectorAll('#map [data-country]').length`, &countries)
			if serverLinks != 0 || countries == 0 {
				t.Errorf("%d links to a server in the file, %d countries on the map", serverLinks, countries)
			}
			asFaster := false
			for _, v := range dom {
				asFaster = asFaster || v.Group == "AS" && v.Verdict == model.VerdictFaster
			}
			if !asFaster {
				t.Errorf("Asia is not shown faster: %+v", dom)
			}

			// The view follows the address, as on the dashboard.
			var group string
			tb.eval(`document.getElementById('dist-curves').dataset.group`, &group)
			if group != "AS" {
				t.Errorf("the distribution view shows %q, the address asks for AS", group)
			}

			// The first-contact table's runs are the report's.
			var rows map[string]int
			tb.eval(`Object.fromEntries([...document.querySelectorAll('#first-contact table[data-by="group"] tr[data-group]')].map(r =>
			  [r.dataset.group, +r.querySelector('[data-kind=runs]').textContent]))`, &rows)
			wantRows := map[string]int{}
			for _, c := range rep.FirstContact.Groups {
				wantRows[c.Group] = c.Runs
			}
			if len(wantRows) == 0 || !reflect.DeepEqual(rows, wantRows) {
				t.Errorf("first contact on the page %v, in the report %v", rows, wantRows)
			}
			tb.screenshot(filepath.Join(artifactDir(t), "html-report-"+itoa(width)+".png"))
		})
	}

	// The JSON in the page is the whole of both reports.
	m := regexp.MustCompile(`(?s)<script type="application/json" id="h3rum-data">(.*?)</script>`).FindStringSubmatch(html)
	if m == nil {
		t.Fatal("the page carries no report JSON")
	}
	var inPage, direct map[string]any
	b, _ := json.Marshal(map[string]*model.Report{"continent": rep, "country": byCountry})
	if err := json.Unmarshal([]byte(m[1]), &inPage); err != nil {
		t.Fatalf("the page's report JSON: %v", err)
	}
	json.Unmarshal(b, &direct)
	if !reflect.DeepEqual(inPage, direct) {
		t.Error("the page's report JSON differs from the report's")
	}
}

// TestHTMLReportUnreadableData opens in headless Chromium an HTML report
// whose data blocks read null, as html/template writes a value JSON
// cannot carry: the page says that its data is not readable instead of
// drawing nothing without a word.
func TestHTMLReportUnreadableData(t *testing.T) {
	if _, err := chromium.Find(""); err != nil {
		t.Fatalf("the HTML report test needs headless Chromium: %v", err)
	}
	// A complete report of an hour without a run.
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rep, err := queries.Run(context.Background(), newDB(t), model.Options{By: "country", Since: start, Until: start.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := render.HTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile(`(<script type="application/json" id="(?:h3rum|dash)-data">).*?(</script>)`)
	html := blocks.ReplaceAllString(page.String(), "${1}null${2}")
	if n := strings.Count(html, ">null</script>"); n != 2 {
		t.Fatalf("%d data blocks set to null, want the report's and the charts'", n)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tb := openTab(t, ctx, 1280, 900)
	tb.navigate((&url.URL{Scheme: "file", Path: file}).String(),
		`document.getElementById('report-data-failed') && document.getElementById('charts-data-failed')`)
}
