package queries

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/stats"
)

// smallGroup is a group of runs with n samples of each protocol per run,
// its point estimates (ms) set to a stand-in for ClickHouse's t-digest.
func smallGroup(rng *rand.Rand, runs, n int, tdigest float64) (*model.Group, []stats.Run) {
	rs := make([]stats.Run, runs)
	for i := range rs {
		u := 0.35 * rng.NormFloat64()
		for k := 0; k < n; k++ {
			rs[i].H2 = append(rs[i].H2, math.Round(50*math.Exp(u+0.3*rng.NormFloat64())*10)/10)
			rs[i].H3 = append(rs[i].H3, math.Round(48*math.Exp(u+0.25*rng.NormFloat64())*10)/10)
		}
		slices.Sort(rs[i].H2)
		slices.Sort(rs[i].H3)
	}
	g := &model.Group{Group: "g", Runs: runs, Samples: 2 * runs * n}
	outcome := func() *model.Stats {
		s := &model.Stats{Runs: runs, Samples: runs * n, Percentiles: make([]model.Percentile, len(percentiles))}
		for i, p := range percentiles {
			s.Percentiles[i] = model.Percentile{P: p, MS: tdigest}
		}
		s.MarkSufficiency(runs)
		return s
	}
	g.H2, g.H3 = outcome(), outcome()
	return g, rs
}

func pooled(rs []stats.Run, h3 bool) []float64 {
	var all []float64
	for _, r := range rs {
		if h3 {
			all = append(all, r.H3...)
		} else {
			all = append(all, r.H2...)
		}
	}
	slices.Sort(all)
	return all
}

// A small group gets exact type-7 percentiles instead of the t-digest's,
// and intervals only where the rule allows.
func TestSmallGroupExactAndSufficiency(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	g, rs := smallGroup(rng, 40, 5, -1) // 200 samples per protocol, as in the issue
	model.Analyse(context.Background(), g, rs, &model.Options{Replicates: 300, Seed: 1})
	for _, c := range []struct {
		name string
		s    *model.Stats
		all  []float64
	}{{"h2", g.H2, pooled(rs, false)}, {"h3", g.H3, pooled(rs, true)}} {
		if !c.s.Exact {
			t.Errorf("%s: 200 samples, all fetched, not exact", c.name)
		}
		for _, p := range c.s.Percentiles {
			if want := exactQuantile(c.all, p.P/100); math.Abs(p.MS-want) > 5e-4 {
				t.Errorf("%s p%g = %.3f, exact type 7 is %.3f", c.name, p.P, p.MS, want)
			}
			// 40 runs: p50 needs 30, p75 already 60.
			if p.Insufficient != (p.P > 50) || (p.CILowMS == nil) != p.Insufficient {
				t.Errorf("%s p%g: insufficient %v, interval %v, with 40 runs", c.name, p.P, p.Insufficient, p.CILowMS != nil)
			}
		}
	}
	for i, d := range g.Diff {
		if d.MS != model.Round3(g.H3.Percentiles[i].MS-g.H2.Percentiles[i].MS) || d.Insufficient != (d.P > 50) ||
			(d.CILowMS == nil) != d.Insufficient || (d.CILowPct == nil) != d.Insufficient {
			t.Errorf("diff p%g: %+v", d.P, d)
		}
	}

	// The t-digest stays for a thinned group, for a count that disagrees
	// with the point query's, and from ExactBelowSamples on.
	for _, tc := range []struct {
		name string
		edit func(g *model.Group, rs []stats.Run) []stats.Run
	}{
		{"thinned", func(g *model.Group, rs []stats.Run) []stats.Run { g.Sampled, g.Runs = true, 400; return rs }},
		{"count differs", func(g *model.Group, rs []stats.Run) []stats.Run { g.H2.Samples++; g.H3.Samples++; return rs }},
		{"large", func(g *model.Group, rs []stats.Run) []stats.Run {
			big, more := smallGroup(rng, model.ExactBelowSamples/5, 5, -1)
			*g = *big
			return more
		}},
	} {
		g, rs := smallGroup(rng, 40, 5, -1)
		rs = tc.edit(g, rs)
		model.Analyse(context.Background(), g, rs, &model.Options{Replicates: -1})
		if g.H2.Exact || g.H3.Exact || g.H2.Percentiles[0].MS != -1 || g.H3.Percentiles[4].MS != -1 {
			t.Errorf("%s: exact %v/%v, p50 %v", tc.name, g.H2.Exact, g.H3.Exact, g.H2.Percentiles[0].MS)
		}
	}
}

// The bootstrap stops when its context ends: a report whose client left
// does not compute on.
func TestBootstrapStopsWhenCanceled(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	g, rs := smallGroup(rng, 200, 5, -1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	model.Analyse(ctx, g, rs, &model.Options{Replicates: model.MaxReplicates, Seed: 1})
	for _, s := range []*model.Stats{g.H2, g.H3} {
		if p := s.Percentiles[0]; p.CILowMS != nil {
			t.Errorf("canceled bootstrap still produced an interval: %+v", p)
		}
	}
	g, rs = smallGroup(rng, 200, 5, -1)
	model.Analyse(context.Background(), g, rs, &model.Options{Replicates: 200, Seed: 1})
	if p := g.H2.Percentiles[0]; p.CILowMS == nil {
		t.Errorf("bootstrap without cancellation gave no interval: %+v", p)
	}
}
