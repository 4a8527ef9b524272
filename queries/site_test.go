package queries

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/stats"
	"github.com/h3rum/h3rum/queries/synth"
)

// TestSiteWideLineIsExact: the site-wide line of a report grouped by
// continent or country is the test's own order-balanced exact quantiles
// of every selected sample of the window, whatever group it is in; its
// weights are each group's share of the runs; its verdicts are the rule's
// at p50, p90 and p95, on both sources.
func TestSiteWideLineIsExact(t *testing.T) {
	conn := newDB(t)
	rows := synth.All(synth.Config{Seed: 11, Runs: 3000})
	load(t, conn, rows)
	ctx := context.Background()
	for _, by := range []string{"continent", "country"} {
		for _, src := range []model.Source{model.SourceRaw, model.SourceRollup} {
			o := model.Options{Since: testSince, Until: testUntil, Source: src, By: by, MaxRunsPerGroup: 100000, Replicates: 200}
			rep, err := Run(ctx, conn, o)
			if err != nil {
				t.Fatalf("%s %s: %v", by, src, err)
			}
			label := by + " " + string(src)
			s := rep.SiteWide
			if s == nil {
				t.Fatalf("%s: no site-wide line", label)
			}
			all := o
			all.By = "none"
			if err := all.Validate(); err != nil {
				t.Fatal(err)
			}
			want := exact(rows, all)["all"]
			checkSiteFigures(t, label, s, want, rep)
			checkSiteWeights(t, label, s, rep)
			checkSiteVerdicts(t, label, s)
		}
	}
}

func checkSiteFigures(t *testing.T, label string, s *model.SiteWide, want *exactGroup, rep *model.Report) {
	t.Helper()
	if s.Sampled || s.PooledRuns != s.Runs {
		t.Errorf("%s: sampled %v, %d of %d runs pooled; want every run", label, s.Sampled, s.PooledRuns, s.Runs)
	}
	for _, c := range []struct {
		oc string
		s  *model.Stats
	}{{model.OutcomeH2, s.H2}, {model.OutcomeH3, s.H3}} {
		if c.s == nil {
			t.Fatalf("%s: no %s figures", label, c.oc)
		}
		if c.s.Samples != len(want.out[c.oc]) || c.s.Runs != len(want.outRuns[c.oc]) || !c.s.Exact {
			t.Errorf("%s %s: samples/runs %d/%d exact %v, want %d/%d exact", label, c.oc, c.s.Samples, c.s.Runs, c.s.Exact, len(want.out[c.oc]), len(want.outRuns[c.oc]))
		}
		for _, p := range c.s.Percentiles {
			w, _ := balancedQuantile(want.ord[c.oc], p.P/100)
			if math.Abs(p.MS-w) > 1e-3 {
				t.Errorf("%s %s p%g = %.3f, exact over every group %.3f", label, c.oc, p.P, p.MS, w)
			}
		}
	}
	for k, d := range s.Diff {
		if math.Abs(d.MS-(s.H3.Percentiles[k].MS-s.H2.Percentiles[k].MS)) > 0.002 {
			t.Errorf("%s diff p%g = %.3f, not H3 − H2", label, d.P, d.MS)
		}
		if !d.Insufficient && (d.CILowMS == nil || *d.CILowMS > d.MS || *d.CIHighMS < d.MS) {
			t.Errorf("%s diff p%g = %.3f outside its interval %v–%v", label, d.P, d.MS, d.CILowMS, d.CIHighMS)
		}
	}
	if len(rep.Groups) < 2 {
		t.Fatalf("%s: %d groups; the test needs several", label, len(rep.Groups))
	}
}

// checkSiteWeights: each group's share is its runs over the line's, the
// largest first, summing to one.
func checkSiteWeights(t *testing.T, label string, s *model.SiteWide, rep *model.Report) {
	t.Helper()
	total, sum := 0, 0.0
	for _, w := range s.Weights {
		total += w.Runs
		sum += w.Share
		if w.Drawn != w.Runs {
			t.Errorf("%s %s: %d of %d runs drawn, want all", label, w.Group, w.Drawn, w.Runs)
		}
		if math.Abs(w.Share-float64(w.Runs)/float64(s.Runs)) > 1e-6 {
			t.Errorf("%s %s: share %v of %d runs in %d", label, w.Group, w.Share, w.Runs, s.Runs)
		}
	}
	if total != s.Runs || math.Abs(sum-1) > 1e-4 {
		t.Errorf("%s: weights count %d runs (shares %v), line %d", label, total, sum, s.Runs)
	}
	if !slices.IsSortedFunc(s.Weights, func(a, b model.SiteWeight) int { return b.Runs - a.Runs }) {
		t.Errorf("%s: weights not largest first", label)
	}
	if len(s.Weights) != len(rep.Groups) {
		t.Errorf("%s: %d weights for %d groups", label, len(s.Weights), len(rep.Groups))
	}
}

func checkSiteVerdicts(t *testing.T, label string, s *model.SiteWide) {
	t.Helper()
	if len(s.Verdicts) != 3 {
		t.Fatalf("%s: %d verdicts, want p50, p90 and p95", label, len(s.Verdicts))
	}
	for i, v := range s.Verdicts {
		if v.Group != model.SiteGroup || v.P != []float64{50, 90, 95}[i] {
			t.Errorf("%s: verdict %d is %s at p%g", label, i, v.Group, v.P)
		}
		d := s.Diff[slices.Index(percentiles[:], v.P)]
		if v.DiffMS == nil || *v.DiffMS != d.MS {
			t.Errorf("%s p%g: verdict's difference %v, line's %v", label, v.P, v.DiffMS, d.MS)
		}
		if v.CILowMS != nil {
			want := map[stats.Decision]string{stats.Faster: model.VerdictFaster, stats.Slower: model.VerdictSlower, stats.NoDifference: model.VerdictNoDifference}[stats.Decide(*v.CILowMS, *v.CIHighMS)]
			if v.Verdict != want {
				t.Errorf("%s p%g: verdict %s for interval %v–%v, want %s", label, v.P, v.Verdict, *v.CILowMS, *v.CIHighMS, want)
			}
		}
	}
	if !strings.HasPrefix(s.Headline, "All visitors (") {
		t.Errorf("%s: headline %q", label, s.Headline)
	}
}
