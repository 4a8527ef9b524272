package queries

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/params"
	"github.com/h3rum/h3rum/queries/query"
	"github.com/h3rum/h3rum/queries/stats"
	"github.com/h3rum/h3rum/queries/synth"
)

func TestReportEmptyWindow(t *testing.T) {
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 2, Runs: 100}))
	for _, src := range []model.Source{model.SourceRaw, model.SourceRollup} {
		rep, err := Run(context.Background(), conn, model.Options{Since: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC), Source: src})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if len(rep.Groups) != 0 || len(rep.Timeline) != 0 {
			t.Errorf("%s: empty window has %d groups, %d hours", src, len(rep.Groups), len(rep.Timeline))
		}
		checkOutputs(t, rep)
		var b bytes.Buffer
		writeTable(&b, rep)
		if !strings.Contains(b.String(), "no samples in this window") {
			t.Errorf("table for an empty window:\n%s", b.String())
		}
	}
}

func TestReportSingleProtocolAndGroupings(t *testing.T) {
	conn := newDB(t)
	rows := synth.All(synth.Config{Seed: 3, Runs: 600, OnlyH2: true})
	load(t, conn, rows)
	ctx := context.Background()
	// Runs without an H3 batch are no like-for-like pair: the headline
	// leaves every one out, as partial, and shows the groups without figures.
	head, err := Run(ctx, conn, model.Options{Since: testSince, Until: testUntil})
	if err != nil {
		t.Fatal(err)
	}
	if len(head.Groups) == 0 {
		t.Fatal("no groups in the headline report")
	}
	for _, g := range head.Groups {
		if g.H2 != nil || g.H3 != nil || g.Excluded["partial"] != g.DesignRuns || g.DesignRuns == 0 {
			t.Errorf("headline group %s: h2 %v h3 %v, %d of %d runs excluded as partial", g.Group, g.H2 != nil, g.H3 != nil,
				g.Excluded["partial"], g.DesignRuns)
		}
	}
	checkOutputs(t, head)
	// Widened past the headline, the H2-only data is reported as such.
	rep, err := Run(ctx, conn, model.Options{Since: testSince, Until: testUntil, IncludeExcluded: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) == 0 {
		t.Fatal("no groups")
	}
	for _, g := range rep.Groups {
		if g.H2 == nil || g.H3 != nil || len(g.Diff) != 0 || g.Paired != nil || g.Availability != nil || !g.TooSmall {
			t.Errorf("H2-only group %s: h2 %v h3 %v diff %d paired %v availability %v too_small %v",
				g.Group, g.H2 != nil, g.H3 != nil, len(g.Diff), g.Paired, g.Availability, g.TooSmall)
		}
		// Intervals where the group's runs are enough (MinTailRuns), none
		// below: OC's few runs get none, EU's a p50 to p90.
		for _, p := range g.H2.Percentiles {
			if p.Insufficient != !stats.Sufficient(g.H2.Runs, p.P) || (p.CILowMS == nil) != p.Insufficient {
				t.Errorf("%s p%g with %d runs: insufficient %v, interval %v", g.Group, p.P, g.H2.Runs, p.Insufficient, p.CILowMS != nil)
			}
		}
		if g.Group == "EU" && g.H2.Percentiles[2].CILowMS == nil {
			t.Errorf("EU (%d runs) has no p90 interval", g.H2.Runs)
		}
	}
	checkOutputs(t, rep)

	// Every grouping and filter gives the exact per-group sample counts.
	for _, by := range model.Groupings() {
		for _, f := range []model.Options{{IncludeExcluded: true}, {IncludeWarmup: true, IncludeFailed: true, IncludeBots: true, IncludeExcluded: true}} {
			o := f
			o.Since, o.Until, o.By, o.Replicates = testSince, testUntil, by, -1
			rep, err := Run(ctx, conn, o)
			if err != nil {
				t.Fatalf("by %s: %v", by, err)
			}
			o.Validate()
			o.Since, o.Until = rep.Since, rep.Until // the rollup rounds to whole hours
			want := exact(rows, o)
			if len(rep.Groups) != len(want) {
				t.Errorf("by %s: %d groups, want %d", by, len(rep.Groups), len(want))
			}
			for _, g := range rep.Groups {
				if e := want[g.Group]; e == nil || e.samples != g.Samples || g.Runs != len(e.runs) {
					t.Errorf("by %s %+v: group %s has %d samples, %d runs", by, f, g.Group, g.Samples, g.Runs)
				}
				if rep.CI.Method != "none" || (g.H2 != nil && g.H2.Percentiles[0].CILowMS != nil) {
					t.Errorf("by %s: intervals computed with Replicates < 0", by)
				}
			}
			wantSource := "raw"
			if query.RollupAnswers(&o) {
				wantSource = "rollup"
			}
			if rep.Source != wantSource {
				t.Errorf("by %s %+v: source %s, want %s", by, f, rep.Source, wantSource)
			}
		}
	}
	if _, err := Run(ctx, conn, model.Options{By: "asn", Source: model.SourceRollup}); !errors.Is(err, model.ErrInvalidOptions) {
		t.Errorf("rollup by asn: err = %v, want ErrInvalidOptions", err)
	}
}

// A cap a third above what p99 needs thins a group and still shows every
// interval; a cap below p99's need is refused (TestRunsNeeded). 3500 runs
// are one insert, one part: the t-digest then reads the same both times.
func TestReportSampledBootstrap(t *testing.T) {
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 4, Runs: 3500, Regions: synth.DefaultRegions[:1]}))
	ctx := context.Background()
	full, err := Run(ctx, conn, model.Options{Since: testSince, Until: testUntil, MaxRunsPerGroup: 100000})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 2000
	capped, err := Run(ctx, conn, model.Options{Since: testSince, Until: testUntil, MaxRunsPerGroup: limit})
	if err != nil {
		t.Fatal(err)
	}
	f, c := full.Groups[0], capped.Groups[0]
	if f.Sampled || !c.Sampled || c.BootstrapRuns < limit*9/10 || c.BootstrapRuns > limit*11/10 {
		t.Fatalf("sampled %v/%v, bootstrap runs %d/%d; want about %d when capped", f.Sampled, c.Sampled, f.BootstrapRuns, c.BootstrapRuns, limit)
	}
	if f.H2.Exact || c.H2.Exact || f.H2.Samples < model.ExactBelowSamples {
		t.Fatalf("%d H2 samples, exact %v/%v: want t-digest estimates in both reports", f.H2.Samples, f.H2.Exact, c.H2.Exact)
	}
	// Point estimates come from ClickHouse either way; the scaled interval
	// of the sample estimates the full-data width.
	for i, d := range c.Diff {
		fd := f.Diff[i]
		if d.Insufficient || fd.Insufficient {
			t.Fatalf("p%g: insufficient (capped %v, full %v) with %d and %d runs fetched", d.P, d.Insufficient, fd.Insufficient, c.BootstrapRuns, f.BootstrapRuns)
		}
		if d.MS != fd.MS {
			t.Errorf("p%g: capped estimate %.3f differs from full %.3f", d.P, d.MS, fd.MS)
		}
		wf, wc := *fd.CIHighMS-*fd.CILowMS, *d.CIHighMS-*d.CILowMS
		if wc < wf/2 || wc > wf*2 || *d.CILowMS > d.MS || *d.CIHighMS < d.MS {
			t.Errorf("p%g: capped CI [%.2f, %.2f] vs full [%.2f, %.2f]", d.P, *d.CILowMS, *d.CIHighMS, *fd.CILowMS, *fd.CIHighMS)
		}
	}
}

// TestAutoSourceCoversTheWholeWindow: the default (rollup) report covers
// the window asked for, up to its last second — whole hours from the
// rollup, the partial hours at the edges from raw rows — and counts
// exactly what raw rows give for the same window.
func TestAutoSourceCoversTheWholeWindow(t *testing.T) {
	conn := newDB(t)
	rows := synth.All(synth.Config{Seed: 6, Runs: 200})
	load(t, conn, rows)
	// Every grouping the rollup answers.
	for _, by := range []string{"continent", "country", "none"} {
		rep, err := Run(context.Background(), conn, model.Options{Since: testSince, Until: testUntil, By: by})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Source != "rollup" || !rep.Since.Equal(testSince) || !rep.Until.Equal(testUntil) {
			t.Errorf("auto report by %s: source %s window %s – %s, want rollup %s – %s", by, rep.Source, rep.Since, rep.Until, testSince, testUntil)
		}
		raw, err := Run(context.Background(), conn, model.Options{Since: testSince, Until: testUntil, Source: model.SourceRaw, By: by})
		if err != nil {
			t.Fatal(err)
		}
		// The designs: from run_counts for the whole hours and the runs
		// table for the edges, as the runs table gives them.
		if len(rep.Designs) == 0 || !reflect.DeepEqual(rep.Designs, raw.Designs) {
			t.Errorf("by %s: designs from the rollup %+v, from raw rows %+v", by, rep.Designs, raw.Designs)
		}
		o := model.Options{Since: testSince, Until: testUntil, By: by}
		o.Validate()
		want := exact(rows, o)
		if len(raw.Groups) != len(rep.Groups) || len(rep.Groups) != len(want) {
			t.Fatalf("by %s: %d rollup groups, %d raw, %d exact", by, len(rep.Groups), len(raw.Groups), len(want))
		}
		for i := range raw.Groups {
			g := rep.Groups[i]
			if raw.Groups[i].Samples != g.Samples || want[g.Group] == nil || want[g.Group].samples != g.Samples {
				t.Errorf("by %s, %s: rollup %d samples, raw %d on the same window", by, g.Group, g.Samples, raw.Groups[i].Samples)
			}
			for k := range percentiles {
				if a, b := g.H3.Percentiles[k].MS, raw.Groups[i].H3.Percentiles[k].MS; a != b {
					t.Errorf("by %s, %s: H3 p%g %v from the rollup, %v from raw rows", by, g.Group, percentiles[k], a, b)
				}
			}
			// The intention-to-treat view: the same runs, requests and
			// failures from the rollup as from raw rows.
			ri, wi := g.ITT, raw.Groups[i].ITT
			if ri == nil || wi == nil || ri.H2 == nil || ri.H3 == nil || wi.H2 == nil || wi.H3 == nil {
				t.Fatalf("by %s, %s: intention to treat %+v (rollup), %+v (raw)", by, g.Group, ri, wi)
			}
			for _, c := range [][2]*model.ITTStats{{ri.H2, wi.H2}, {ri.H3, wi.H3}} {
				if c[0].Samples != c[1].Samples || c[0].Failed != c[1].Failed || c[0].Runs != c[1].Runs ||
					c[0].FailedRuns != c[1].FailedRuns || c[0].RunFailureRate != c[1].RunFailureRate {
					t.Errorf("by %s, %s: intention to treat from the rollup %+v, from raw rows %+v", by, g.Group, *c[0], *c[1])
				}
				// Percentiles from itt_rollup's states, within the
				// t-digest's bound of raw rows' (as TestRunsTableAnswersAsTheSamples allows).
				for j := range c[0].Percentiles {
					if p, q := c[0].Percentiles[j].MS, c[1].Percentiles[j].MS; p == 0 || math.Abs(p-q) > 0.5+0.03*math.Abs(q) {
						t.Errorf("by %s, %s: intention to treat p%g %.3f ms from the rollup, %.3f from raw rows", by, g.Group, c[0].Percentiles[j].P, p, q)
					}
				}
			}
			// Handshakes: from handshake_rollup for the whole hours and
			// samples for the edges, the same requests as raw rows give.
			if len(g.Handshakes) == 0 || len(g.Handshakes) != len(raw.Groups[i].Handshakes) {
				t.Fatalf("by %s, %s: handshakes from the rollup %+v, from raw rows %+v", by, g.Group, g.Handshakes, raw.Groups[i].Handshakes)
			}
			for j, h := range g.Handshakes {
				r := raw.Groups[i].Handshakes[j]
				if h.Proto != r.Proto || h.Kind != r.Kind || h.Samples != r.Samples || h.Retried != r.Retried || h.FastestMS != r.FastestMS ||
					math.Abs(h.ResumedShare-r.ResumedShare) > 1e-6 || math.Abs(h.EarlyShare-r.EarlyShare) > 1e-6 {
					t.Errorf("by %s, %s: handshakes from the rollup %+v, from raw rows %+v", by, g.Group, h, r)
				}
				for k := range h.Percentiles {
					for _, c := range [][2]float64{{h.Percentiles[k].MS, r.Percentiles[k].MS}, {h.ConnectMS[k].MS, r.ConnectMS[k].MS}} {
						if math.Abs(c[0]-c[1]) > 0.5+0.03*math.Abs(c[1]) {
							t.Errorf("by %s, %s: %s handshake p%g %.3f ms from the rollup, %.3f from raw rows", by, g.Group, h.Proto, h.Percentiles[k].P, c[0], c[1])
						}
					}
				}
			}
			// The excluded runs: from run_counts for the whole hours and
			// the runs table for the edges, as the runs table gives them.
			w := raw.Groups[i]
			if g.DesignRuns != w.DesignRuns || !mapsEqual(g.Excluded, w.Excluded) || !mapsEqual(g.ColdRuns, w.ColdRuns) ||
				(g.Availability == nil) != (w.Availability == nil) || g.Availability != nil && *g.Availability != *w.Availability && g.Availability.GotH3 != w.Availability.GotH3 {
				t.Errorf("by %s, %s: excluded runs from the rollup %d %v %v %+v, from raw rows %d %v %v %+v", by, g.Group,
					g.DesignRuns, g.Excluded, g.ColdRuns, g.Availability, w.DesignRuns, w.Excluded, w.ColdRuns, w.Availability)
			}
		}
		// First contact and the script errors: from run_fact_counts for
		// the whole hours and run_facts for the edges, as run_facts gives them.
		for _, c := range []struct {
			what     string
			roll, rw any
		}{{"first contact", rep.FirstContact, raw.FirstContact}, {"script errors", rep.ScriptErrors, raw.ScriptErrors}} {
			a, _ := json.Marshal(c.roll)
			b, _ := json.Marshal(c.rw)
			if string(a) != string(b) {
				t.Errorf("by %s: %s from the rollup %s, from raw rows %s", by, c.what, a, b)
			}
		}
		if rep.FirstContact == nil || len(rep.FirstContact.Groups) == 0 {
			t.Errorf("by %s: no first contact counted", by)
		}
	}
}

func TestOptionsFromValues(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	o, err := params.OptionsFromValues(url.Values{"since": {"7d"}, "by": {"country"}, "site": {"a.example"}, "warmup": {"1"}, "min_runs": {"10"},
		"excluded": {"1"}, "design": {"10,4096,3,1"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if o.By != "country" || o.Site != "a.example" || !o.IncludeWarmup || o.MinRuns != 10 || !o.Since.Equal(now.Add(-7*24*time.Hour)) ||
		!o.IncludeExcluded || o.Design != (model.Design{Parallel: 10, Bytes: 4096, Warmup: 3, BeaconMajor: 1, Set: true}) {
		t.Errorf("parsed %+v", o)
	}
	back, err := params.OptionsFromValues(params.Values(&o), now)
	if err != nil || back.By != o.By || !back.Since.Equal(o.Since) || !back.IncludeWarmup || !back.IncludeExcluded || back.Design != o.Design {
		t.Errorf("values round trip: %+v, %v", back, err)
	}
	v, err := params.OptionsFromValues(url.Values{"verdict_p": {"50"}, "effect_ms": {"2.5"}}, now)
	if err != nil || v.VerdictP != 50 || v.EffectMS != 2.5 {
		t.Errorf("verdict_p=50&effect_ms=2.5: %v %v, %v", v.VerdictP, v.EffectMS, err)
	}
	if back, err := params.OptionsFromValues(params.Values(&v), now); err != nil || back.VerdictP != 50 || back.EffectMS != 2.5 {
		t.Errorf("verdict options round trip: %+v, %v", back, err)
	}
	if d, _ := params.OptionsFromValues(url.Values{}, now); d.VerdictP != model.DefaultVerdictP || d.EffectMS != model.DefaultEffectMS || params.Values(&d).Has("verdict-p") {
		t.Errorf("verdict defaults: %v %v, in links: %v", d.VerdictP, d.EffectMS, params.Values(&d))
	}
	if all, err := params.OptionsFromValues(url.Values{"design": {"all"}}, now); err != nil || !all.Design.All {
		t.Errorf("design=all: %+v, %v", all.Design, err)
	} else if st, err := prepare("points_raw.sql", &all, query.Window{}, nil); err != nil || !strings.Contains(st.SQL, "AND (1 AND source = @source)") {
		t.Errorf("design=all pools every design: %v\n%s", err, st.SQL)
	}
	for _, v := range []url.Values{
		{"by": {"x"}}, {"since": {"soon"}}, {"until": {"2020-01-01"}, "since": {"2021-01-01"}},
		{"min_runs": {"many"}}, {"bots": {"maybe"}}, {"colour": {"red"}}, {"by": {"country", "asn"}},
		{"design": {"5,0,2"}}, {"design": {"5,0,2,x"}}, {"design": {"5,0,-2,1"}}, {"design": {"1,2,3,4,5"}},
		{"design": {"5,0,2,1) OR (1=1"}}, {"design": {"5,0,2,1,gap=1' OR '1"}}, {"design": {"5,0,2,1,gap"}},
		{"design": {"5,0,2,1,Gap=1"}}, {"design": {"5,0,2,1,gap=1.5"}}, {"design": {"5,0,2,1,"}}, {"excluded": {"perhaps"}},
		{"verdict_p": {"p95"}}, {"verdict_p": {"96"}}, {"effect_ms": {"ten"}}, {"effect_ms": {"0x"}}, {"effect_ms": {"-Inf"}},
		{"effect_ms": {"1e-300"}}, {"effect-ms": {"NaN"}}, {"effect-ms": {"1e6"}},
		// Durations out of a Duration's range, which the conversion would
		// turn into anything.
		{"since": {"NaNd"}}, {"since": {"1e5w"}}, {"since": {"Infd"}}, {"until": {"1e300d"}}, {"since": {"--1d"}},
	} {
		if _, err := params.OptionsFromValues(v, now); !errors.Is(err, model.ErrInvalidOptions) {
			t.Errorf("%v: err = %v, want ErrInvalidOptions", v, err)
		}
	}
}
