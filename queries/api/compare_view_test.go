//go:build unix

package api

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/queries/model"
)

// TestDashboardCompareInChromium: over TestCompareWindows's planted change
// (Asia 0 → −150 ms at p95 from the first two days to the next two, Europe
// unchanged), the before/after view reads the change per group, keeps its
// baseline in the address and shows the same after a reload.
func TestDashboardCompareInChromium(t *testing.T) {
	if _, err := chromium.Find(""); err != nil {
		t.Fatalf("the before/after test needs headless Chromium: %v", err)
	}
	conn := plantedChange(t, false)
	base := serve(t, &Handler{Conn: conn, Token: testToken}).URL
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tb := openTab(t, ctx, 1280, 900)
	const ready = `document.getElementById('compare').dataset.state === 'ready' && document.querySelectorAll('#compare-table tr[data-group]').length === 2`
	type seen struct {
		Chart, Table, Text map[string]string
		Since, Until       string
	}
	const read = `({chart: Object.fromEntries([...document.querySelectorAll('#compare-svg g.compare-group')].map(g => [g.dataset.group, g.dataset.change + (g.querySelector('circle.dot') ? ' dot' : '')])),
  table: Object.fromEntries([...document.querySelectorAll('#compare-table tr[data-group]')].map(r => [r.dataset.group, r.dataset.change])),
  text: Object.fromEntries([...document.querySelectorAll('#compare-text li')].map(l => [l.dataset.group, l.textContent])),
  since: document.getElementById('compare-since').value, until: document.getElementById('compare-until').value})`
	check := func(how, since, until string) seen {
		t.Helper()
		var s seen
		tb.eval(read, &s)
		if s.Table["AS"] != model.ChangeH3Gained || s.Table["EU"] != model.ChangeNone || s.Chart["AS"] != model.ChangeH3Gained+" dot" || s.Chart["EU"] != model.ChangeNone+" dot" ||
			!strings.HasPrefix(s.Text["AS"], "AS: HTTP/3 gained ") || s.Text["EU"] == "" || s.Since != since || s.Until != until {
			t.Errorf("%s: %+v, want AS h3_gained, EU no_change, baseline %s – %s", how, s, since, until)
		}
		return s
	}
	// The default baseline: the two days before the page's window.
	tb.navigate(base+"/dashboard?since=2025-01-03T00:00:00Z&until=2025-01-05T00:00:00Z&token="+testToken+"#view=compare", ready)
	check("default baseline", "2025-01-01T00:00:00Z", "2025-01-03T00:00:00Z")
	tb.screenshot(filepath.Join(artifactDir(t), "dashboard-compare.png"))
	// The report's first contact, in the same template as the HTML report's:
	// each group's runs of the window, by group and by browser.
	var fc map[string]string
	tb.eval(`Object.fromEntries([...document.querySelectorAll('#first-contact table.first-contact tr[data-group]')].map(r =>
  [r.closest('table').dataset.by + ' ' + r.dataset.group, r.querySelector('[data-kind="runs"]').textContent + ' ' + r.querySelector('[data-kind="h3_first_share"]').textContent]))`, &fc)
	if !strings.HasPrefix(fc["group AS"], "1200 ") || !strings.HasPrefix(fc["group EU"], "1000 ") || len(fc) < 3 || strings.HasSuffix(fc["group AS"], " -") {
		t.Errorf("the dashboard's first-contact tables: %v", fc)
	}

	// A baseline typed in goes into the fragment and is compared.
	tb.eval(`(() => { document.getElementById('compare-since').value = '2025-01-01T12:00:00Z'; document.getElementById('compare-until').value = '2025-01-02T12:00:00Z';
  document.getElementById('compare-go').click(); })()`, nil)
	tb.wait(`location.hash.includes('baseline_since=') && document.getElementById('compare-status').textContent.includes('2025-01-01T12:00:00Z') && ` + ready)
	check("typed baseline", "2025-01-01T12:00:00Z", "2025-01-02T12:00:00Z")
	var href string
	tb.eval(`location.href`, &href)
	u, err := url.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := url.ParseQuery(u.Fragment); h.Get("view") != "compare" || h.Get("baseline_since") != "2025-01-01T12:00:00Z" || h.Get("baseline_until") != "2025-01-02T12:00:00Z" {
		t.Errorf("the address after Compare: %s", href)
	}
	// The address round-trips: loaded afresh, the same comparison.
	tb.navigate("about:blank", "true")
	tb.navigate(href, `document.getElementById('compare-status').textContent.includes('2025-01-01T12:00:00Z') && `+ready)
	check("reloaded", "2025-01-01T12:00:00Z", "2025-01-02T12:00:00Z")
	// A baseline overlapping the window: the server's reason, shown.
	tb.eval(`(() => { document.getElementById('compare-since').value = '2025-01-02T00:00:00Z'; document.getElementById('compare-until').value = '2025-01-04T00:00:00Z';
  document.getElementById('compare-go').click(); })()`, nil)
	tb.wait(`document.getElementById('compare').dataset.state === 'failed'`)
	var msg string
	tb.eval(`document.getElementById('compare-status').textContent`, &msg)
	if !strings.Contains(msg, "overlaps") {
		t.Errorf("an overlapping baseline reads %q", msg)
	}
	for _, p := range tb.problems() {
		if !strings.Contains(p, "/api/compare") || !strings.Contains(p, "400") {
			t.Errorf("page: %s", p)
		}
	}
}
