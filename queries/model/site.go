package model

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/h3rum/h3rum/queries/stats"
)

// SiteGroup is the name the site-wide line's verdicts go by.
const SiteGroup = "all visitors"

// sitePercentiles are those the site-wide line judges: Dropbox's headline
// percentiles and the median.
var sitePercentiles = []float64{50, 90, 95}

// SiteWide is the report's first line: H3 − H2 for every visitor of the
// selection, each run weighing the same whatever group it is in, so that
// regions count as much as their visitors do (Weights). Its figures are
// computed as a group's are, over the runs of every group pooled
// (stats.Pool): exact, with the bootstrap's intervals and the verdict
// rule, when no group was thinned; a proportional sample of every group's
// runs when one was. With one group it is that group.
type SiteWide struct {
	// Runs are the selection's runs in the groups the bootstrap read;
	// PooledRuns those the figures stand on: all of them unless Sampled.
	Runs       int  `json:"runs"`
	PooledRuns int  `json:"pooled_runs"`
	Sampled    bool `json:"sampled"`
	// BootstrapRuns are the pooled runs the intervals and the paired view
	// stand on: all of them, or a uniform sample of MaxRunsPerGroup.
	BootstrapRuns int `json:"bootstrap_runs"`
	// Weights are each group's share of Runs, most runs first, and the
	// runs the pool drew from it.
	Weights      []SiteWeight  `json:"weights"`
	H2           *Stats        `json:"h2"`
	H3           *Stats        `json:"h3"`
	Diff         []Diff        `json:"diff"`
	Paired       *Paired       `json:"paired"`
	Availability *Availability `json:"h3_availability"`
	// Verdicts judge H3 − H2 at p50, p90 and p95 by the report's rule
	// (an experiment's confidence sequence in an experiment).
	Verdicts []Verdict `json:"verdicts"`
	// Headline says it in Dropbox's form: "HTTP/3 cut p95 by 146 ms (21 %)".
	Headline string `json:"headline"`
}

// SiteWeight is one group's part of the site-wide line.
type SiteWeight struct {
	Group string  `json:"group"`
	Runs  int     `json:"runs"`
	Share float64 `json:"share"` // of SiteWide.Runs
	Drawn int     `json:"drawn"` // runs of the group in the pool
}

// siteRunsPerGroup is how many groups' worth of runs (MaxRunsPerGroup
// each) the site-wide line's percentiles read at most; its bootstrap reads
// one group's worth of them, so that it costs what a group's does.
const siteRunsPerGroup = 4

// SiteLine computes the site-wide line from the groups, whose figures
// are in, and each group's fetched runs, sorted: NewSitePool, then Line.
func SiteLine(ctx context.Context, groups []*Group, byGroup map[string][]stats.Run, o *Options) *SiteWide {
	var names []string
	populations := map[string]int{}
	byName := map[string]*Group{}
	for _, g := range groups {
		names = append(names, g.Group)
		byName[g.Group] = g
		if g.Sampled {
			populations[g.Group] = g.Runs
		}
	}
	return NewSitePool(ctx, names, byGroup, populations, o).Line(byName, o)
}

// SitePool is the site-wide line's runs, every group's pooled, and with
// several groups the pool's bootstrap: what reads the groups' names,
// fetched runs and populations alone, so that it may be computed before
// the groups' point estimates are in, beside the groups' own bootstrap
// (Resample). Line makes the line once they are.
type SitePool struct {
	names  []string
	strata []stats.Stratum
	pool   stats.Pool
	boot   []stats.Run // a uniform sample of the pool of one group's worth (MaxRunsPerGroup)
	pre    *Resampled  // boot's bootstrap; nil with one group, which is the site
}

// NewSitePool pools the fetched runs (sorted) of the groups names, each
// a uniform sample of populations[name] runs where that exceeds them, and
// bootstraps a sample of the pool of one group's worth, so that the line
// costs what a group does.
func NewSitePool(ctx context.Context, names []string, byGroup map[string][]stats.Run, populations map[string]int, o *Options) *SitePool {
	sp := &SitePool{}
	for _, name := range names {
		if runs := byGroup[name]; len(runs) > 0 {
			sp.strata = append(sp.strata, stats.Stratum{Runs: runs, Population: populations[name]})
			sp.names = append(sp.names, name)
		}
	}
	if len(sp.names) == 0 {
		return sp
	}
	sp.pool = stats.NewPool(sp.strata, siteRunsPerGroup*o.MaxRunsPerGroup, o.Seed)
	if len(sp.names) > 1 {
		slices.SortFunc(sp.pool.Runs, stats.CompareRuns)
		sp.boot = stats.NewPool([]stats.Stratum{{Runs: sp.pool.Runs, Population: sp.pool.Population}}, o.MaxRunsPerGroup, o.Seed).Runs
		population := 0
		if len(sp.boot) < sp.pool.Population {
			population = sp.pool.Population
		}
		sp.pre = Resample(ctx, SiteGroup, sp.boot, population, o)
	}
	return sp
}

// Line is the site-wide line from the pool and the groups by name, whose
// figures are in: of several groups it reads only what is set before the
// bootstrap (name, runs, sampled, the point estimates' counts), so that
// it may be made beside Apply of the groups; with one group it is that
// group, whose figures must be done first. Nil without a run.
func (sp *SitePool) Line(groups map[string]*Group, o *Options) *SiteWide {
	if len(sp.names) == 0 {
		return nil
	}
	in := make([]*Group, len(sp.names))
	for i, name := range sp.names {
		in[i] = groups[name]
	}
	pool := sp.pool
	site := &SiteWide{Runs: pool.Population, PooledRuns: len(pool.Runs), Sampled: pool.Fraction < 1}
	for i, g := range in {
		n := max(sp.strata[i].Population, len(sp.strata[i].Runs))
		site.Weights = append(site.Weights, SiteWeight{Group: g.Group, Runs: n,
			Share: math.Round(float64(n)/float64(pool.Population)*1e6) / 1e6, Drawn: pool.Drawn[i]})
	}
	slices.SortStableFunc(site.Weights, func(a, b SiteWeight) int { return cmp.Compare(b.Runs, a.Runs) })
	sg := in[0] // the one group is the site: its figures, not a second estimate of them
	if len(in) > 1 {
		sg = sp.pooledGroup(in, o)
	}
	site.BootstrapRuns = sg.BootstrapRuns
	site.H2, site.H3, site.Diff, site.Paired, site.Availability = sg.H2, sg.H3, sg.Diff, sg.Paired, sg.Availability
	// The verdicts read what Judge needs of sg, no more: the one group's
	// other fields are still being filled by the report's other sections.
	judged := &Group{Group: SiteGroup, H2: sg.H2, H3: sg.H3, Diff: sg.Diff, Availability: sg.Availability, Sampled: sg.Sampled}
	rule := o.verdictRule()
	for _, p := range sitePercentiles {
		rule.P = p
		site.Verdicts = append(site.Verdicts, rule.Judge(judged))
	}
	site.Headline = siteHeadline(site)
	return site
}

// pooledGroup is the figures of the pool, every group's runs drawn in
// proportion: percentiles exact over the pool, and the bootstrap's
// intervals and the paired view from a uniform sample of it of one
// group's worth (MaxRunsPerGroup), scaled to the whole as a thinned
// group's are.
func (sp *SitePool) pooledGroup(in []*Group, o *Options) *Group {
	runs := sp.pool.Runs
	sampled := sp.pool.Fraction < 1
	sg := &Group{Group: SiteGroup, Runs: sp.pool.Population}
	sg.H2, sg.H3 = pooledStats(in, runs, stats.KindH2, sampled), pooledStats(in, runs, stats.KindH3, sampled)
	sg.WantedH3GotH2 = pooledStats(in, runs, stats.KindFallback, sampled)
	sg.Sampled = len(sp.boot) < sp.pool.Population
	sg.BootstrapRuns = len(sp.boot)
	Apply(sg, sp.boot, sp.pre)
	finishGroup(sg, o)
	return sg
}

// pooledStats is one outcome's figures over the pooled runs, nil without
// a sample of it: the pool's exact percentiles, and the groups' own run
// and sample counts when the pool is a sample of them.
func pooledStats(groups []*Group, runs []stats.Run, k stats.Kind, sampled bool) *Stats {
	s := &Stats{Percentiles: make([]Percentile, len(percentiles))}
	for i := range runs {
		if v := runs[i].Samples(k); len(v) > 0 {
			s.Runs, s.Samples = s.Runs+1, s.Samples+len(v)
			if runs[i].H3First {
				s.RunsByOrder.H3First++
			} else {
				s.RunsByOrder.H2First++
			}
		}
	}
	if s.Samples == 0 {
		return nil
	}
	qs, ok := stats.Exact(runs, k, percentiles[:])
	for i, p := range percentiles {
		s.Percentiles[i].P = p
		if ok {
			s.Percentiles[i].MS = Round3(qs[i])
		}
	}
	s.Exact = ok && !sampled
	if sampled {
		// The counts of the whole selection, as a group's are.
		s.Runs, s.Samples, s.RunsByOrder = 0, 0, OrderRuns{}
		for _, g := range groups {
			if gs := g.outcome(k); gs != nil {
				s.Runs, s.Samples = s.Runs+gs.Runs, s.Samples+gs.Samples
				s.RunsByOrder.H2First += gs.RunsByOrder.H2First
				s.RunsByOrder.H3First += gs.RunsByOrder.H3First
			}
		}
	}
	return s
}

// outcome is g's figures of kind k.
func (g *Group) outcome(k stats.Kind) *Stats {
	switch k {
	case stats.KindH2:
		return g.H2
	case stats.KindH3:
		return g.H3
	case stats.KindFallback:
		return g.WantedH3GotH2
	}
	return g.Other
}

// siteHeadline says the site-wide verdicts in one sentence, Dropbox's
// form first: "All visitors (12 400 runs): HTTP/3 cut p90 by 48 ms (13 %)
// and p95 by 146 ms (21 %); no difference detectable at p50."
func siteHeadline(s *SiteWide) string {
	var cut, added, rest []string
	for _, v := range s.Verdicts {
		at := "p" + strconv.FormatFloat(v.P, 'f', -1, 64)
		switch v.Verdict {
		case VerdictFaster:
			cut = append(cut, fmt.Sprintf("%s by %s ms (%s %%)", at, roughMS(-*v.DiffMS), roughMS(-*v.DiffPct)))
		case VerdictSlower:
			added = append(added, fmt.Sprintf("%s ms (%s %%) at %s", roughMS(*v.DiffMS), roughMS(*v.DiffPct), at))
		default:
			rest = append(rest, siteUndecided(v, at))
		}
	}
	var parts []string
	if len(cut) > 0 {
		parts = append(parts, "HTTP/3 cut "+and(cut))
	}
	if len(added) > 0 {
		parts = append(parts, "HTTP/3 added "+and(added))
	}
	parts = append(parts, rest...)
	return fmt.Sprintf("All visitors (%s runs): %s.", GroupDigits(s.Runs), strings.Join(parts, "; "))
}

// WeightsText states the line's weights: each group's share of the runs,
// and whether the figures stand on a proportional sample of them.
func (s *SiteWide) WeightsText() string {
	var b strings.Builder
	b.WriteString("each run weighs the same, whatever its group: ")
	for i, w := range s.Weights {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s %%", w.Group, strconv.FormatFloat(100*w.Share, 'f', 1, 64))
	}
	if s.Sampled {
		fmt.Fprintf(&b, "; figures from %s of the %s runs, the same share of each group", GroupDigits(s.PooledRuns), GroupDigits(s.Runs))
	}
	return b.String()
}

// siteUndecided says a site-wide verdict that is neither faster nor
// slower, briefly.
func siteUndecided(v Verdict, at string) string {
	switch v.Verdict {
	case VerdictNoDifference:
		return "no difference detectable at " + at
	case VerdictKeepGoing:
		return "undecided at " + at + " (keep going)"
	case VerdictNoHTTP3:
		return "HTTP/3 never used"
	case VerdictNoInterval:
		return "no interval at " + at
	}
	return "not enough runs yet at " + at
}

// and joins phrases as a sentence does: "a", "a and b", "a, b and c".
func and(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}
