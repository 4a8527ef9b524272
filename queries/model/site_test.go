package model

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/h3rum/h3rum/queries/stats"
)

// TestSiteWideLineWeighsThinnedGroups: a group thinned to 3 000 of its
// 10 000 runs and a complete one of 1 000 weigh 10 to 1 in the line, not
// 3 to 1 as fetched. In the large group H3 is 20 ms faster, in the small
// one 40 ms slower: weighed as the visitors are, 1 run in 11 is slower,
// so p90 is the large group's −20 ms and p95 the small one's +40 ms;
// pooled as fetched, p90 would be +40 too.
func TestSiteWideLineWeighsThinnedGroups(t *testing.T) {
	run := func(h2, h3 float64) stats.Run {
		r := stats.Run{}
		for range 5 {
			r.H2, r.H3 = append(r.H2, h2), append(r.H3, h3)
		}
		r.H2Par, r.H3Par = r.H2, r.H3
		return r
	}
	group := func(name string, runs, fetched int, h2, h3 float64) (*Group, []stats.Run) {
		g := &Group{Group: name, Runs: runs, Sampled: fetched < runs,
			H2: &Stats{Runs: runs, Samples: 5 * runs, RunsByOrder: OrderRuns{H2First: runs}},
			H3: &Stats{Runs: runs, Samples: 5 * runs, RunsByOrder: OrderRuns{H2First: runs}}}
		rs := make([]stats.Run, fetched)
		for i := range rs {
			rs[i] = run(h2, h3)
		}
		return g, rs
	}
	big, bigRuns := group("big", 10000, 3000, 100, 80)
	small, smallRuns := group("small", 1000, 1000, 100, 140)
	o := &Options{MaxRunsPerGroup: 3000, Seed: 1, Replicates: 50}
	s := SiteLine(context.Background(), []*Group{big, small}, map[string][]stats.Run{"big": bigRuns, "small": smallRuns}, o)
	if s == nil {
		t.Fatal("no site-wide line")
	}
	if !s.Sampled || s.Runs != 11000 || s.PooledRuns != 3300 || s.BootstrapRuns != 3000 {
		t.Fatalf("line of %d runs, %d pooled, %d bootstrapped, sampled %v; want 3 300 of 11 000, 3 000 bootstrapped", s.Runs, s.PooledRuns, s.BootstrapRuns, s.Sampled)
	}
	if w := s.Weights; len(w) != 2 || w[0].Group != "big" || w[0].Drawn != 3000 || w[1].Drawn != 300 || math.Abs(w[1].Share-1.0/11) > 1e-6 {
		t.Errorf("weights %+v, want big 3 000 drawn, small 300 at 1/11", w)
	}
	if s.H2.Runs != 11000 || s.H3.Samples != 55000 || s.H3.Exact {
		t.Errorf("H2 runs %d, H3 samples %d exact %v: want the groups' counts, not exact", s.H2.Runs, s.H3.Samples, s.H3.Exact)
	}
	for _, c := range []struct{ p, want float64 }{{50, -20}, {90, -20}, {95, 40}} {
		d := s.Diff[slices.Index(percentiles[:], c.p)]
		if math.Abs(d.MS-c.want) > 1e-9 {
			t.Errorf("H3 − H2 at p%g = %v, want %v", c.p, d.MS, c.want)
		}
	}
	if !strings.Contains(s.Headline, "HTTP/3 cut p50 by 20 ms") {
		t.Errorf("headline %q", s.Headline)
	}
}
