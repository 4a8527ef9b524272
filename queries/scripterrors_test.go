package queries

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/model"
)

// TestScriptErrorsByBrowser plants runs of two browsers, one with script
// errors of two kinds (one of them in a run cut short in its warm-ups) and
// one without, beside a Chrome run of an older script, whose zero counts
// must not count as a run without errors. Each run's counts repeat in
// every one of its rows: the section must take each run once.
func TestScriptErrorsByBrowser(t *testing.T) {
	conn := newDB(t)
	ctx := context.Background()
	at := time.Date(2025, 4, 1, 12, 0, 0, 0, time.UTC)
	var b store.Batch
	add := func(i int, browser, version string, x beacon.ScriptErrors, plant func(*store.Run)) {
		run := storetest.Run(t, "errors")
		run.Received = at.Add(time.Duration(i) * time.Second)
		run.Browser = browser
		run.Report.BeaconVersion, run.Report.ScriptErrors = version, x
		if plant != nil {
			plant(&run)
		}
		b.Add(&run)
	}
	add(0, "Chrome", "1.3.0", beacon.ScriptErrors{Warmup: 2, Timing: 1}, nil)
	add(1, "Chrome", "1.3.0", beacon.ScriptErrors{}, nil)
	// Cut short after its warm-ups: its rows are warm-up rows only, and it
	// is partial, which the section does not leave out.
	add(2, "Chrome", "1.3.0", beacon.ScriptErrors{Timing: 1}, func(r *store.Run) {
		r.Report.Samples = slices.DeleteFunc(r.Report.Samples, func(s beacon.Sample) bool { return s.Phase != beacon.PhaseWarmup })
		r.Report.Partial = true
	})
	add(3, "Firefox", "1.3.0", beacon.ScriptErrors{Batch: 1}, nil)
	add(4, "Firefox", "1.10.0", beacon.ScriptErrors{}, nil) // later than 1.3.0, not before it
	add(5, "Chrome", "1.2.0", beacon.ScriptErrors{}, nil)   // an older script: no counts to trust
	add(6, "Chrome", "1.0.0", beacon.ScriptErrors{}, nil)
	if err := b.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}

	want := &model.ScriptErrors{SinceBeacon: "1.3.0", Browsers: []model.BrowserScriptErrors{
		{Browser: "Chrome", Runs: 3, RunsWithErrors: 2, Warmup: 2, Timing: 2},
		{Browser: "Firefox", Runs: 2, RunsWithErrors: 1, Batch: 1},
	}}
	for _, by := range []string{"none", "continent", "browser"} {
		rep, err := Run(ctx, conn, model.Options{Since: at.Add(-time.Hour), Until: at.Add(time.Hour), By: by, MinRuns: 1, Replicates: -1})
		if err != nil {
			t.Fatalf("by %s: %v", by, err)
		}
		if got := rep.ScriptErrors; got == nil || got.SinceBeacon != want.SinceBeacon || !slices.Equal(got.Browsers, want.Browsers) {
			t.Errorf("by %s: script errors %+v, want %+v", by, got, want)
		}
		// The dashboard's table, from the same report.
		page, err := renderDashboard(rep, new(rep.Options()), false)
		if err != nil {
			t.Fatalf("by %s: %v", by, err)
		}
		for _, row := range []string{
			`<tr data-browser="Chrome">
<th scope="row">Chrome</th><td class="n" data-kind="runs">3</td><td class="n" data-kind="runs_with_errors">2</td>
<td class="n" data-kind="idle">0</td><td class="n" data-kind="warmup">2</td><td class="n" data-kind="batch">0</td>
<td class="n" data-kind="timing">2</td><td class="n" data-kind="send">0</td>`,
			`<tr data-browser="Firefox">
<th scope="row">Firefox</th><td class="n" data-kind="runs">2</td><td class="n" data-kind="runs_with_errors">1</td>
<td class="n" data-kind="idle">0</td><td class="n" data-kind="warmup">0</td><td class="n" data-kind="batch">1</td>`,
		} {
			if !strings.Contains(string(page), row) {
				t.Errorf("by %s: the dashboard has no row\n%s", by, row)
			}
		}
	}

	// Outside the window, of another site, or an agent report: nothing.
	rep, err := Run(ctx, conn, model.Options{Since: at.Add(time.Hour), Until: at.Add(2 * time.Hour), MinRuns: 1, Replicates: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ScriptErrors == nil || len(rep.ScriptErrors.Browsers) != 0 {
		t.Errorf("empty window: script errors %+v, want no browser", rep.ScriptErrors)
	}
	rep, err = Run(ctx, conn, model.Options{Since: at.Add(-time.Hour), Until: at.Add(time.Hour), Site: "other", MinRuns: 1, Replicates: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ScriptErrors == nil || len(rep.ScriptErrors.Browsers) != 0 {
		t.Errorf("another site: script errors %+v, want no browser", rep.ScriptErrors)
	}
	rep, err = Run(ctx, conn, model.Options{Since: at.Add(-time.Hour), Until: at.Add(time.Hour), Agent: true, MinRuns: 1, Replicates: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ScriptErrors != nil {
		t.Errorf("agent report: script errors %+v, want none", rep.ScriptErrors)
	}
}

func TestScriptVersion(t *testing.T) {
	for v, want := range map[string][]uint32{"1.3.0": {1, 3, 0}, "2": {2}} {
		if got, err := scriptVersion(v); err != nil || !slices.Equal(got, want) {
			t.Errorf("scriptVersion(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"", "1.x", "1..0", "-1.0"} {
		if got, err := scriptVersion(v); err == nil {
			t.Errorf("scriptVersion(%q) = %v, want an error", v, got)
		}
	}
}

// TestScriptErrorsTable: the text table's section, and its absence in an
// estimate.
func TestScriptErrorsTable(t *testing.T) {
	rep := &model.Report{ScriptErrors: &model.ScriptErrors{SinceBeacon: "1.3.0", Browsers: []model.BrowserScriptErrors{
		{Browser: "Chrome", Runs: 3, RunsWithErrors: 2, Warmup: 2, Timing: 2},
		{Browser: "Firefox", Runs: 12},
	}}}
	var b strings.Builder
	if err := writeTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	want := `
Script errors by browser: runs of beacon 1.3.0 and later, the runs with a script error, and errors by stage
browser  runs  with errors  idle  warmup  batch  timing  send
Chrome      3            2     0       2      0       2     0
Firefox    12            0     0       0      0       0     0
`
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("table ends\n%s\nwant\n%s", b.String(), want)
	}
	rep.ScriptErrors = nil
	b.Reset()
	if err := writeTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Script errors") {
		t.Errorf("an estimate's table has a script errors section:\n%s", b.String())
	}
}
