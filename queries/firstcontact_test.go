package queries

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/model"
)

// TestFirstContact plants runs whose first request to the H3 origin used
// h3, used h2 before a later h3, or never led to h3; runs of warm-up 0
// (not measured); runs whose first request failed or is missing
// (unknown); a bot's run, a run outside the window, a replayed run (left
// out by store.Stored, as ingest does) and a run without a request to the
// H3 origin (left out: it has no first contact),
// and checks the exact counts and shares by continent and by browser.
func TestFirstContact(t *testing.T) {
	conn := newDB(t)
	ctx := context.Background()
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	var b store.Batch
	i := 0
	// add plants a run of continent and browser, its samples changed by
	// plant; a run is two warm-ups to the H3 origin, one to the H2 origin
	// and two batches of five, each on the protocol its origin wants.
	add := func(continent, browser string, plant func(*store.Run)) *store.Run {
		run := storetest.RunOf(t, beacontest.Run{Site: "first", Warmup: 2})
		run.Received = at.Add(time.Duration(i) * time.Second)
		i++
		run.Geo.Continent, run.Browser = continent, browser
		// A script that reports its own errors: every run is in the
		// script errors' count too, which run_facts.sql reads in the same
		// pass and must keep out of first contact's.
		run.Report.BeaconVersion = ScriptErrorsSince
		if plant != nil {
			plant(&run)
		}
		b.Add(&run)
		return &run
	}
	firstOnH2 := func(r *store.Run) { r.Report.Samples[0].Got = beacon.ProtoH2 }
	neverH3 := func(r *store.Run) {
		for k := range r.Report.Samples {
			if r.Report.Samples[k].Want == beacon.ProtoH3 {
				r.Report.Samples[k].Got = beacon.ProtoH2
			}
		}
	}
	noWarmup := func(r *store.Run) { // the script's data-warmup="0": seq 0 is the H2 warm-up
		r.Report.Samples = slices.DeleteFunc(r.Report.Samples, func(s beacon.Sample) bool {
			return s.Phase == beacon.PhaseWarmup && s.Want == beacon.ProtoH3
		})
		for k := range r.Report.Samples {
			r.Report.Samples[k].Seq -= 2
		}
		r.Report.Params.Warmup = 0
	}
	// Where the first request on h3 learnt HTTP/3 (the script's alt):
	// three before the page, two from its loads, one not recorded.
	for _, a := range []beacon.AltSvc{beacon.AltSvcNone, beacon.AltSvcNone, beacon.AltSvcH3, beacon.AltSvcScript, beacon.AltSvcOtherTCP, beacon.AltSvcUnrecorded} {
		add("EU", "Chrome", func(r *store.Run) { r.Report.AltSvc = a })
	}
	for range 3 {
		add("EU", "Chrome", firstOnH2)
	}
	add("EU", "Chrome", neverH3)
	for range 2 {
		add("EU", "Firefox", firstOnH2)
	}
	for range 2 {
		add("EU", "Firefox", noWarmup)
	}
	replayed := add("AS", "Chrome", nil)
	add("AS", "Chrome", func(r *store.Run) { r.Report.Samples[0].Error = "timeout" })
	add("AS", "Chrome", func(r *store.Run) { // hidden before its first request was reported
		r.Report.Samples = r.Report.Samples[1:]
		r.Report.Partial = true
	})
	add("AS", "Chrome", func(r *store.Run) { r.Report.Samples[0].Got = beacon.ProtoUnknown })
	add("EU", "Chrome", func(r *store.Run) { // hidden before any request to the H3 origin: not in first contact
		r.Report.Samples = slices.DeleteFunc(r.Report.Samples, func(s beacon.Sample) bool { return s.Want == beacon.ProtoH3 })
		r.Report.Partial = true
	})
	add("EU", "Chrome", func(r *store.Run) { r.Bot = true })                        // left out but with include_bots
	add("EU", "Chrome", func(r *store.Run) { r.Received = at.Add(-2 * time.Hour) }) // outside the window
	if err := b.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	// A spool replay of one run goes through the check ingest makes
	// (ingest/batch.go): a run already stored is left out of the insert,
	// so run_facts holds it once.
	stored, err := store.Stored(ctx, conn, []*store.Run{replayed})
	if err != nil {
		t.Fatal(err)
	}
	if !stored[replayed.Report.RunID] {
		var again store.Batch
		again.Add(replayed)
		if err := again.Insert(ctx, conn); err != nil {
			t.Fatal(err)
		}
	}

	p := func(v, lo, hi float64) *model.Proportion { return &model.Proportion{Share: v, CILow: &lo, CIHigh: &hi} }
	// 95 % Wilson intervals (to 0.001, as the report's), computed apart from
	// the code under test.
	eu := model.FirstContactCount{Group: "EU", Runs: 14, H3First: 6, KnownBefore: 3, FromPage: 2, Unattributed: 1, Upgraded: 5, Never: 1, NotMeasured: 2, Measured: 12,
		H3FirstShare: p(0.5, 0.254, 0.746), UpgradedShare: p(0.416667, 0.193, 0.68), NeverShare: p(0.083333, 0.015, 0.354),
		KnownBeforeShare: p(0.25, 0.089, 0.532), FromPageShare: p(0.166667, 0.047, 0.448)}
	as := model.FirstContactCount{Group: "AS", Runs: 4, H3First: 1, Unattributed: 1, Unknown: 3, Measured: 1,
		H3FirstShare: p(1, 0.207, 1), UpgradedShare: p(0, 0, 0.793), NeverShare: p(0, 0, 0.793),
		KnownBeforeShare: p(0, 0, 0.793), FromPageShare: p(0, 0, 0.793)}
	chrome := model.FirstContactCount{Group: "Chrome", Runs: 14, H3First: 7, KnownBefore: 3, FromPage: 2, Unattributed: 2, Upgraded: 3, Never: 1, Unknown: 3, Measured: 11,
		H3FirstShare: p(0.636364, 0.354, 0.848), UpgradedShare: p(0.272727, 0.097, 0.566), NeverShare: p(0.090909, 0.016, 0.377),
		KnownBeforeShare: p(0.272727, 0.097, 0.566), FromPageShare: p(0.181818, 0.051, 0.477)}
	firefox := model.FirstContactCount{Group: "Firefox", Runs: 4, Upgraded: 2, NotMeasured: 2, Measured: 2,
		H3FirstShare: p(0, 0, 0.658), UpgradedShare: p(1, 0.342, 1), NeverShare: p(0, 0, 0.658),
		KnownBeforeShare: p(0, 0, 0.658), FromPageShare: p(0, 0, 0.658)}
	for _, c := range []struct {
		by   string
		bots bool
		want *model.FirstContact
	}{
		{"continent", false, &model.FirstContact{By: "continent", Groups: []model.FirstContactCount{eu, as}, Browsers: []model.FirstContactCount{chrome, firefox}}},
		{"browser", false, &model.FirstContact{By: "browser", Groups: []model.FirstContactCount{chrome, firefox}, Browsers: []model.FirstContactCount{chrome, firefox}}},
		{"none", false, &model.FirstContact{By: "none", Groups: []model.FirstContactCount{{Group: "all", Runs: 18, H3First: 7, KnownBefore: 3, FromPage: 2, Unattributed: 2,
			Upgraded: 5, Never: 1, NotMeasured: 2, Unknown: 3, Measured: 13, H3FirstShare: p(0.538462, 0.291, 0.768),
			UpgradedShare: p(0.384615, 0.177, 0.645), NeverShare: p(0.076923, 0.014, 0.333),
			KnownBeforeShare: p(0.230769, 0.082, 0.503), FromPageShare: p(0.153846, 0.043, 0.422)}},
			Browsers: []model.FirstContactCount{chrome, firefox}}},
	} {
		// Whole hours: from run_fact_counts, and from run_facts' rows.
		for _, src := range []model.Source{model.SourceAuto, model.SourceRaw} {
			rep, err := Run(ctx, conn, model.Options{Since: at.Add(-time.Hour), Until: at.Add(time.Hour), By: c.by, MinRuns: 1, Replicates: -1, IncludeBots: c.bots, Source: src})
			if err != nil {
				t.Fatalf("by %s from %s: %v", c.by, src, err)
			}
			if !reflect.DeepEqual(rep.FirstContact, c.want) {
				t.Errorf("by %s from %s: first contact\n%s\nwant\n%s", c.by, src, fcText(rep.FirstContact), fcText(c.want))
			}
		}
	}

	// The same pass counts the script errors' runs: the design's (warm-up
	// 2, not Firefox's two of warm-up 0), the one without a request to the
	// H3 origin among them, none with an error.
	rep, err := Run(ctx, conn, model.Options{Since: at.Add(-time.Hour), Until: at.Add(time.Hour), By: "continent", MinRuns: 1, Replicates: -1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []model.BrowserScriptErrors{{Browser: "Chrome", Runs: 15}, {Browser: "Firefox", Runs: 2}}; !reflect.DeepEqual(rep.ScriptErrors.Browsers, want) {
		t.Errorf("script errors %+v, want %+v", rep.ScriptErrors.Browsers, want)
	}

	// With bots, the bot's run counts, first on h3.
	rep, err = Run(ctx, conn, model.Options{Since: at.Add(-time.Hour), Until: at.Add(time.Hour), By: "continent", MinRuns: 1, Replicates: -1, IncludeBots: true})
	if err != nil {
		t.Fatal(err)
	}
	if g := rep.FirstContact.Groups[0]; g.Group != "EU" || g.Runs != 15 || g.H3First != 7 {
		t.Errorf("with bots: EU %+v, want 15 runs, 7 first on h3", g)
	}

	// The table and the CSV say the same.
	var tb bytes.Buffer
	if err := writeTable(&tb, rep); err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(tb.String(), "\nFirst contact with the HTTP/3 origin")
	if !ok {
		t.Fatalf("the table has no first-contact section:\n%s", tb.String())
	}
	for _, want := range []string{"EU 15 7 3 2 5 1 53.8% [29.1%, 76.8%] 23.1% 38.5% 7.7% 2 0", "Firefox 4 0 0 0 2 0 0.0% [0.0%, 65.8%] 0.0% 100.0% 0.0% 2 0"} {
		found := false
		for line := range strings.Lines(section) {
			found = found || strings.Join(strings.Fields(line), " ") == want
		}
		if !found {
			t.Errorf("the first-contact section has no row %q:\n%s", want, section)
		}
	}
	var cb bytes.Buffer
	if err := writeCSV(&cb, rep); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, r := range rows {
		switch strings.Join(r, ",") {
		case "EU,false,first_contact_share,h3_first,,0.538462,0.291,0.768,13,0,",
			"EU,false,first_contact_share,h3_known_before,,0.230769,0.082,0.503,13,0,",
			"EU,false,first_contact_runs,h3_from_page,,2,,,15,0,",
			"EU,false,first_contact_runs,h3_first_unattributed,,2,,,15,0,",
			"AS,false,first_contact_runs,unknown,,3,,,4,0,",
			"EU,false,first_contact_runs,not_measured,,2,,,15,0,":
			found++
		}
	}
	if found != 6 {
		t.Errorf("CSV has %d of the 6 first-contact rows looked for:\n%s", found, cb.String())
	}
}

// fcText shows a first-contact section for a failure message.
func fcText(fc *model.FirstContact) string {
	if fc == nil {
		return "nil"
	}
	var b strings.Builder
	b.WriteString("by " + fc.By + "\n")
	for _, list := range [][]model.FirstContactCount{fc.Groups, fc.Browsers} {
		for _, c := range list {
			b.WriteString(fmt.Sprintf("  %s runs %d h3 %d (before %d page %d unattributed %d) up %d never %d nm %d unk %d measured %d", c.Group, c.Runs, c.H3First,
				c.KnownBefore, c.FromPage, c.Unattributed, c.Upgraded, c.Never, c.NotMeasured, c.Unknown, c.Measured))
			for _, s := range []*model.Proportion{c.H3FirstShare, c.KnownBeforeShare, c.FromPageShare, c.UpgradedShare, c.NeverShare} {
				if s != nil && s.CILow != nil {
					b.WriteString(fmt.Sprintf(" %g[%g,%g]", s.Share, *s.CILow, *s.CIHigh))
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("  --\n")
	}
	return b.String()
}
