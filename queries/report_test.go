package queries

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
	"github.com/h3rum/h3rum/queries/stats"
	"github.com/h3rum/h3rum/queries/synth"
)

// Accuracy of ClickHouse's quantilesTDigest, as a rank error. Its t-digest
// (QuantileTDigest.h, epsilon = 0.01, same in 18.16 and 24.x) merges
// neighbouring centroids only while their combined weight stays below
// 4·n·q(1−q)·epsilon, so an interpolated quantile is off by at most about
// one centroid: a rank error of 0.04·q(1−q). States merged across parts,
// threads and rollup hours are compressed again, so we allow twice that,
// plus two observations for interpolation at small n. The estimate must
// then lie between the exact order statistics at ranks q ± δ — a bound
// in rank, not in ms, because the ms error depends on the density.
func tdigestRankTolerance(q float64, n int) float64 {
	return 0.08*q*(1-q) + 2/float64(n)
}

// exactBracket returns the exact order statistics at ranks q ± δ.
func exactBracket(sorted []float64, q float64) (lo, hi float64) {
	n := len(sorted)
	d := tdigestRankTolerance(q, n)
	i := int(math.Floor(float64(n-1) * (q - d)))
	j := int(math.Ceil(float64(n-1) * (q + d)))
	i = min(max(i, 0), n-1)
	j = min(max(j, 0), n-1)
	return sorted[i], sorted[j]
}

// orderOf is the batch order index of a generated run.
func orderOf(id uuid.UUID) int {
	if synth.Order(id) == "h3first" {
		return 1
	}
	return 0
}

// balancedQuantile is the report's order-balanced quantile computed here:
// the mean of the two orders' type-7 quantiles (sorted data per order), or
// the one order's.
func balancedQuantile(v *[2][]float64, q float64) (float64, bool) {
	return balancedOf(v, func(s []float64) float64 { return exactQuantile(s, q) })
}

func balancedOf(v *[2][]float64, f func([]float64) float64) (float64, bool) {
	var sum float64
	n := 0
	for _, s := range v {
		if len(s) > 0 {
			sum += f(s)
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// balancedBracket is exactBracket of each order, balanced.
func balancedBracket(v *[2][]float64, q float64) (lo, hi float64) {
	lo, _ = balancedOf(v, func(s []float64) float64 { l, _ := exactBracket(s, q); return l })
	hi, _ = balancedOf(v, func(s []float64) float64 { _, h := exactBracket(s, q); return h })
	return lo, hi
}

// exactQuantile is an independent type-7 quantile of sorted data.
func exactQuantile(sorted []float64, q float64) float64 {
	h := float64(len(sorted)-1) * q
	i := int(h)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}

// outcomeOf classifies a generated sample as the report does.
func outcomeOf(s synth.Sample) string {
	switch {
	case s.Want == "h2" && s.Got == "h2":
		return model.OutcomeH2
	case s.Want == "h3" && s.Got == "h3":
		return model.OutcomeH3
	case s.Want == "h3" && (s.Got == "h2" || s.Got == "h1"):
		return model.OutcomeWantedH3GotH2
	}
	return model.OutcomeOther
}

// keyOf returns a sample's group for a grouping.
func keyOf(s synth.Sample, by string) string {
	v := map[string]string{
		"continent": s.Continent, "country": s.Country, "subdivision": s.Subdivision,
		"browser": s.Browser, "connection": s.ECT, "collector": s.Collector, "none": "all",
	}[by]
	if by == "asn" && s.ASN != 0 {
		v = "AS" + strconv.Itoa(int(s.ASN))
	}
	if by == "connection" && !slices.Contains(beacon.EffectiveTypes[:], v) {
		v = "" // free text stored before c.et kept to its vocabulary
	}
	if v == "" {
		return "unknown"
	}
	return v
}

// selected applies the report's filters to a generated sample; ex holds
// the runs' exclusions (synth.Exclusions). Every generated run has one
// design, so the design filter keeps them all.
func selected(s synth.Sample, o model.Options, ex map[uuid.UUID]store.Exclusions) bool {
	counts := ^store.Exclusions(0) // the reasons that leave a run out
	if o.IncludeBots {
		counts &^= store.ExcludeBot
	}
	return !s.Time.Before(o.Since) && s.Time.Before(o.Until) &&
		(o.Site == "" || s.Site == o.Site) &&
		(o.IncludeWarmup || s.Phase == "parallel") &&
		(o.IncludeFailed || s.Error == "") &&
		(o.IncludeBots || s.Bot == 0) &&
		(o.IncludeExcluded || ex[s.RunID]&counts == 0)
}

// runAvailabilityOf counts, among the non-bot runs of group in o's window,
// those with an H3 batch and those whose every H3-batch request was served
// over h3 without error.
func runAvailabilityOf(rows []synth.Sample, group string, o model.Options) (available, withH3 int) {
	type run struct{ n, ok int }
	runs := map[uuid.UUID]*run{}
	for _, s := range rows {
		if keyOf(s, o.By) != group || s.Time.Before(o.Since) || !s.Time.Before(o.Until) || (o.Site != "" && s.Site != o.Site) ||
			s.Bot != 0 || s.Phase != "parallel" || s.Want != "h3" {
			continue
		}
		r := runs[s.RunID]
		if r == nil {
			r = &run{}
			runs[s.RunID] = r
		}
		r.n++
		if s.Got == "h3" && s.Error == "" {
			r.ok++
		}
	}
	for _, r := range runs {
		withH3++
		if r.ok == r.n {
			available++
		}
	}
	return available, withH3
}

// exactGroup is the test's own computation of one group.
type exactGroup struct {
	runs    map[uuid.UUID]bool
	samples int
	out     map[string][]float64     // sorted durations per outcome
	ord     map[string]*[2][]float64 // the same by batch order
	outRuns map[string]map[uuid.UUID]bool
	perRun  map[uuid.UUID]*exactRun
}

type exactRun struct {
	h2, h3, h2Par, h3Par []float64
	fbPar, gotH3, fb     int
	order                int
}

func exact(rows []synth.Sample, o model.Options) map[string]*exactGroup {
	groups := map[string]*exactGroup{}
	ex := synth.Exclusions(rows)
	for _, s := range rows {
		if !selected(s, o, ex) {
			continue
		}
		k := keyOf(s, o.By)
		g := groups[k]
		if g == nil {
			g = &exactGroup{runs: map[uuid.UUID]bool{}, out: map[string][]float64{}, ord: map[string]*[2][]float64{}, outRuns: map[string]map[uuid.UUID]bool{}, perRun: map[uuid.UUID]*exactRun{}}
			groups[k] = g
		}
		g.runs[s.RunID] = true
		g.samples++
		oc := outcomeOf(s)
		d := float64(s.Duration)
		g.out[oc] = append(g.out[oc], d)
		if g.ord[oc] == nil {
			g.ord[oc] = &[2][]float64{}
		}
		g.ord[oc][orderOf(s.RunID)] = append(g.ord[oc][orderOf(s.RunID)], d)
		if g.outRuns[oc] == nil {
			g.outRuns[oc] = map[uuid.UUID]bool{}
		}
		g.outRuns[oc][s.RunID] = true
		r := g.perRun[s.RunID]
		if r == nil {
			r = &exactRun{order: orderOf(s.RunID)}
			g.perRun[s.RunID] = r
		}
		par := s.Phase == "parallel"
		switch oc {
		case model.OutcomeH2:
			r.h2 = append(r.h2, d)
			if par {
				r.h2Par = append(r.h2Par, d)
			}
		case model.OutcomeH3:
			r.h3 = append(r.h3, d)
			r.gotH3++
			if par {
				r.h3Par = append(r.h3Par, d)
			}
		case model.OutcomeWantedH3GotH2:
			r.fb++
			if par {
				r.fbPar++
			}
		}
	}
	for _, g := range groups {
		for _, v := range g.out {
			sort.Float64s(v)
		}
		for _, v := range g.ord {
			sort.Float64s(v[0])
			sort.Float64s(v[1])
		}
	}
	return groups
}

// paired is the test's own paired view: differences of run medians.
func (g *exactGroup) paired() []float64 {
	return g.pairedOf(func(uuid.UUID) bool { return true })
}

// pairedByOrder is paired split by batch order.
func (g *exactGroup) pairedByOrder() *[2][]float64 {
	var v [2][]float64
	for k, name := range []string{"h2first", "h3first"} {
		v[k] = g.pairedOf(func(id uuid.UUID) bool { return synth.Order(id) == name })
	}
	return &v
}

// pairedOf is paired for the runs keep selects.
func (g *exactGroup) pairedOf(keep func(uuid.UUID) bool) []float64 {
	var d []float64
	for id, r := range g.perRun {
		if !keep(id) {
			continue
		}
		if len(r.h2Par) == 0 || len(r.h3Par) == 0 || r.fbPar > 0 {
			continue
		}
		a, b := append([]float64(nil), r.h3Par...), append([]float64(nil), r.h2Par...)
		sort.Float64s(a)
		sort.Float64s(b)
		d = append(d, exactQuantile(a, 0.5)-exactQuantile(b, 0.5))
	}
	sort.Float64s(d)
	return d
}

// naiveBootstrap is an independent cluster bootstrap: draw runs, pool their
// samples, sort, take the percentile; returns the 2.5/97.5 % points of
// stat over B replicates.
func (g *exactGroup) naiveBootstrap(B int, seed uint64, stat func(h2, h3 *[2][]float64) (float64, bool)) (lo, hi float64) {
	var runs []*exactRun
	for _, r := range g.perRun {
		runs = append(runs, r)
	}
	// Map order is random; sort for reproducibility.
	sort.Slice(runs, func(i, j int) bool {
		a, b := runs[i], runs[j]
		if len(a.h2) != len(b.h2) {
			return len(a.h2) < len(b.h2)
		}
		return sum(a.h2)+sum(a.h3) < sum(b.h2)+sum(b.h3)
	})
	rng := rand.New(rand.NewPCG(seed, 99))
	var reps []float64
	for b := 0; b < B; b++ {
		var h2, h3 [2][]float64
		for range runs {
			r := runs[rng.IntN(len(runs))]
			h2[r.order] = append(h2[r.order], r.h2...)
			h3[r.order] = append(h3[r.order], r.h3...)
		}
		for k := range h2 {
			sort.Float64s(h2[k])
			sort.Float64s(h3[k])
		}
		if v, ok := stat(&h2, &h3); ok {
			reps = append(reps, v)
		}
	}
	sort.Float64s(reps)
	return exactQuantile(reps, 0.025), exactQuantile(reps, 0.975)
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

var (
	testSince = time.Date(2025, 1, 1, 0, 30, 0, 0, time.UTC) // not on an hour: rollup edges come from raw rows
	testUntil = time.Date(2025, 1, 2, 23, 15, 0, 0, time.UTC)
)

func statsOf(g *model.Group, outcome string) *model.Stats {
	switch outcome {
	case model.OutcomeH2:
		return g.H2
	case model.OutcomeH3:
		return g.H3
	case model.OutcomeWantedH3GotH2:
		return g.WantedH3GotH2
	}
	return g.Other
}

func checkPercentiles(t *testing.T, label string, s *model.Stats, byOrder *[2][]float64) {
	t.Helper()
	for _, p := range s.Percentiles {
		lo, hi := balancedBracket(byOrder, p.P/100)
		slack := 1e-3 + 1e-6*math.Abs(p.MS) // float32 and rounding to 0.001
		if p.MS < lo-slack || p.MS > hi+slack {
			want, _ := balancedQuantile(byOrder, p.P/100)
			t.Errorf("%s p%g = %.3f ms, order-balanced exact order statistics at ranks ±δ are [%.3f, %.3f] (exact p%g %.3f)",
				label, p.P, p.MS, lo, hi, p.P, want)
		}
		if p.CILowMS != nil && (*p.CILowMS > p.MS+1e-9 || *p.CIHighMS < p.MS-1e-9) {
			t.Errorf("%s p%g = %.3f outside its CI [%.3f, %.3f]", label, p.P, p.MS, *p.CILowMS, *p.CIHighMS)
		}
	}
}

func TestReportMatchesExactComputation(t *testing.T) {
	conn := newDB(t)
	rows := synth.All(synth.Config{Seed: 7, Runs: 4000})
	load(t, conn, rows)
	ctx := context.Background()

	reports := map[model.Source]*model.Report{}
	for _, src := range []model.Source{model.SourceRaw, model.SourceRollup} {
		o := model.Options{Since: testSince, Until: testUntil, Source: src, MaxRunsPerGroup: 100000}
		rep, err := Run(ctx, conn, o)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		reports[src] = rep
		if rep.Source != string(src) {
			t.Errorf("source = %q, want %q", rep.Source, src)
		}
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		want := exact(rows, o)
		if len(rep.Groups) != len(want) {
			t.Fatalf("%s: %d groups, want %d", src, len(rep.Groups), len(want))
		}
		// The complete report's percentiles are exact here (below); the
		// estimate before AddRuns holds ClickHouse's t-digest values, which
		// must stay within its rank bound (REPORT.md, "Accuracy").
		est, err := Estimate(ctx, conn, o)
		if err != nil {
			t.Fatalf("%s estimate: %v", src, err)
		}
		for i := range est.Groups {
			g := &est.Groups[i]
			for _, oc := range []string{model.OutcomeH2, model.OutcomeH3, model.OutcomeWantedH3GotH2, model.OutcomeOther} {
				if s, e := statsOf(g, oc), want[g.Group]; s != nil && e != nil {
					if s.Exact {
						t.Errorf("%s estimate %s %s: exact before AddRuns", src, g.Group, oc)
					}
					checkPercentiles(t, string(src)+" t-digest "+g.Group+" "+oc, s, e.ord[oc])
				}
			}
		}
		for i := range rep.Groups {
			g := &rep.Groups[i]
			e := want[g.Group]
			if e == nil {
				t.Fatalf("%s: unexpected group %q", src, g.Group)
			}
			label := string(src) + " " + g.Group
			// Runs: uniq from raw rows (exact below 65 536 values but for
			// rare 32-bit hash collisions); HyperLogLog from the rollup.
			if g.Runs != len(e.runs) || g.Samples != e.samples {
				t.Errorf("%s: runs/samples %d/%d, want %d/%d", label, g.Runs, g.Samples, len(e.runs), e.samples)
			}
			for _, oc := range []string{model.OutcomeH2, model.OutcomeH3, model.OutcomeWantedH3GotH2, model.OutcomeOther} {
				s := statsOf(g, oc)
				if (s == nil) != (len(e.out[oc]) == 0) {
					t.Errorf("%s %s: stats present %v, exact samples %d", label, oc, s != nil, len(e.out[oc]))
					continue
				}
				if s == nil {
					continue
				}
				if s.Samples != len(e.out[oc]) || s.Runs != len(e.outRuns[oc]) {
					t.Errorf("%s %s: samples/runs %d/%d, want %d/%d", label, oc, s.Samples, s.Runs, len(e.out[oc]), len(e.outRuns[oc]))
				}
				if s.TooSmall != (s.Runs < model.DefaultMinRuns) {
					t.Errorf("%s %s: too_small %v with %d runs", label, oc, s.TooSmall, s.Runs)
				}
				checkPercentiles(t, label+" "+oc, s, e.ord[oc])
				if o := s.RunsByOrder; o.H2First+o.H3First != len(e.outRuns[oc]) {
					t.Errorf("%s %s: runs by order %+v, want %d in all", label, oc, o, len(e.outRuns[oc]))
				}
				// Every run is fetched here, so below ExactBelowSamples the
				// percentiles are exact type 7; intervals only where the runs
				// are enough (MinTailRuns): H2 and H3 judged on the runs the
				// bootstrap counted (exact), the other outcomes, which have
				// no interval, on the reported runs.
				if s.Exact != (len(e.out[oc]) < model.ExactBelowSamples) {
					t.Errorf("%s %s: exact %v with %d samples", label, oc, s.Exact, len(e.out[oc]))
				}
				runs, withCI := s.Runs, oc == model.OutcomeH2 || oc == model.OutcomeH3
				if withCI {
					runs = len(e.outRuns[oc])
				}
				for _, p := range s.Percentiles {
					if want, _ := balancedQuantile(e.ord[oc], p.P/100); s.Exact && math.Abs(p.MS-want) > 1e-3 {
						t.Errorf("%s %s p%g = %.3f, exact type 7 %.3f", label, oc, p.P, p.MS, want)
					}
					if p.Insufficient != !stats.Sufficient(runs, p.P) || (p.CILowMS != nil) != (withCI && !p.Insufficient) {
						t.Errorf("%s %s p%g with %d runs: insufficient %v, interval %v", label, oc, p.P, runs, p.Insufficient, p.CILowMS != nil)
					}
				}
			}
			h2, h3 := e.ord[model.OutcomeH2], e.ord[model.OutcomeH3]
			if len(g.Diff) != len(percentiles) {
				t.Fatalf("%s: %d differences", label, len(g.Diff))
			}
			for k, d := range g.Diff {
				if math.Abs(d.MS-(g.H3.Percentiles[k].MS-g.H2.Percentiles[k].MS)) > 0.002 {
					t.Errorf("%s diff p%g = %.3f, not h3 − h2 of the reported percentiles", label, d.P, d.MS)
				}
				lo2, hi2 := balancedBracket(h2, d.P/100)
				lo3, hi3 := balancedBracket(h3, d.P/100)
				if d.MS < lo3-hi2-0.01 || d.MS > hi3-lo2+0.01 {
					t.Errorf("%s diff p%g = %.3f outside the exact bracket [%.3f, %.3f]", label, d.P, d.MS, lo3-hi2, hi3-lo2)
				}
				if d.Insufficient != (g.H2.Percentiles[k].Insufficient || g.H3.Percentiles[k].Insufficient) {
					t.Errorf("%s diff p%g: insufficient %v, H2 %v, H3 %v", label, d.P, d.Insufficient,
						g.H2.Percentiles[k].Insufficient, g.H3.Percentiles[k].Insufficient)
				}
				if d.Insufficient {
					if d.CILowMS != nil || d.CILowPct != nil {
						t.Errorf("%s diff p%g: too few runs, yet an interval: %+v", label, d.P, d)
					}
				} else if d.CILowMS == nil || *d.CILowMS > d.MS || *d.CIHighMS < d.MS || *d.CILowPct > d.Pct || *d.CIHighPct < d.Pct {
					t.Errorf("%s diff p%g: estimate outside its CI: %+v", label, d.P, d)
				}
			}
			// Known advantage at the tail: HTTP/3 stalls half as often and
			// half as long, so p95 and p99 are clearly lower in big groups
			// — where they have intervals: the largest group's p95 does.
			if i == 0 && g.Diff[3].Insufficient {
				t.Errorf("%s, the largest group, has no p95 interval", label)
			}
			if !g.TooSmall {
				for _, d := range g.Diff[3:] {
					if !d.Insufficient && *d.CIHighMS >= 0 {
						t.Errorf("%s: p%g difference CI [%.1f, %.1f] does not show the known H3 advantage", label, d.P, *d.CILowMS, *d.CIHighMS)
					}
				}
			}
			if want := len(e.outRuns[model.OutcomeH2]) < model.DefaultMinRuns || len(e.outRuns[model.OutcomeH3]) < model.DefaultMinRuns; g.TooSmall != want {
				t.Errorf("%s: too_small = %v, want %v", label, g.TooSmall, want)
			}

			// Paired view: exact, computed in Go on the same runs.
			pd := e.paired()
			// By batch order: runs and median difference of each.
			if len(g.Paired.ByOrder) != 2 {
				t.Errorf("%s: paired by order %+v", label, g.Paired.ByOrder)
			}
			for _, bo := range g.Paired.ByOrder {
				od := e.pairedOf(func(id uuid.UUID) bool { return synth.Order(id) == bo.Order })
				if bo.Runs != len(od) || len(od) == 0 || bo.MedianMS == nil || math.Abs(*bo.MedianMS-exactQuantile(od, 0.5)) > 0.002 {
					t.Errorf("%s: paired %s %d runs, median %v; exact %d runs", label, bo.Order, bo.Runs, bo.MedianMS, len(od))
				}
			}
			if g.Paired == nil || g.Paired.Runs != len(pd) {
				t.Fatalf("%s: paired %+v, want %d runs", label, g.Paired, len(pd))
			}
			// Win, tie, loss with the 0.5 ms tie band, counted here per batch
			// order and balanced, as the median and p90.
			pdo := e.pairedByOrder()
			share := func(pred func(float64) bool) float64 {
				v, _ := balancedOf(pdo, func(ds []float64) float64 {
					n := 0
					for _, d := range ds {
						if pred(d) {
							n++
						}
					}
					return float64(n) / float64(len(ds))
				})
				return v
			}
			won := share(func(d float64) bool { return d <= -0.5 })
			tie := share(func(d float64) bool { return d > -0.5 && d < 0.5 })
			lost := share(func(d float64) bool { return d >= 0.5 })
			if math.Abs(g.Paired.H3TieShare-tie) > 1e-6 || math.Abs(g.Paired.H3LostShare-lost) > 1e-6 || tie == 0 || lost == 0 {
				t.Errorf("%s: paired tie/lost %.4f/%.4f, exact %.4f/%.4f of %d runs", label, g.Paired.H3TieShare, g.Paired.H3LostShare, tie, lost, len(pd))
			}
			med, _ := balancedQuantile(pdo, 0.5)
			p90, _ := balancedQuantile(pdo, 0.9)
			if math.Abs(g.Paired.MedianMS-med) > 0.002 || math.Abs(g.Paired.P90MS-p90) > 0.002 || math.Abs(g.Paired.H3WonShare-won) > 1e-6 {
				t.Errorf("%s: paired median/p90/won %.3f/%.3f/%.4f, exact %.3f/%.3f/%.4f", label, g.Paired.MedianMS, g.Paired.P90MS,
					g.Paired.H3WonShare, med, p90, won)
			}
			if c := g.Paired.Histogram.Counts; sumInts(c) != len(pd) || len(g.Paired.Histogram.Edges) != len(c)+1 {
				t.Errorf("%s: histogram holds %d of %d runs", label, sumInts(c), len(pd))
			}
			// Availability per run: exact counts of the group's non-bot runs
			// with an H3 batch, and of those whose every H3-batch request
			// was served over h3.
			a := g.Availability
			gotH3, wanted := runAvailabilityOf(rows, g.Group, o)
			if a == nil || a.Unit != "runs" || a.GotH3 != gotH3 || a.WantedH3 != wanted || math.Abs(a.Share-float64(gotH3)/float64(wanted)) > 1e-6 {
				t.Errorf("%s: availability %+v, want %d/%d runs", label, a, gotH3, wanted)
			} else if a.CILow == nil || *a.CILow > a.Share || *a.CIHigh < a.Share {
				t.Errorf("%s: availability %.4f outside its CI", label, a.Share)
			}
			// Failures: exact counts by origin and code.
			wantFail := map[string]int{}
			for _, s := range rows {
				if s.Error != "" && keyOf(s, "continent") == g.Group && !s.Time.Before(o.Since) && s.Time.Before(o.Until) && s.Phase == "parallel" && s.Bot == 0 {
					wantFail[s.Want+":"+s.Error]++
				}
			}
			gotFail := map[string]int{}
			for _, f := range g.Failures {
				gotFail[f.Origin+":"+f.Error] = f.Samples
			}
			if !mapsEqual(gotFail, wantFail) {
				t.Errorf("%s: failures %v, want %v", label, gotFail, wantFail)
			}
		}
		// Timeline: exact hourly counts.
		wantHours := map[time.Time][4]int{}
		ex := synth.Exclusions(rows)
		for _, s := range rows {
			if selected(s, o, ex) {
				h := s.Time.Truncate(time.Hour)
				c := wantHours[h]
				c[map[string]int{model.OutcomeH2: 0, model.OutcomeH3: 1, model.OutcomeWantedH3GotH2: 2, model.OutcomeOther: 3}[outcomeOf(s)]]++
				wantHours[h] = c
			}
		}
		if len(rep.Timeline) != len(wantHours) {
			t.Errorf("%s: %d hours, want %d", src, len(rep.Timeline), len(wantHours))
		}
		for _, h := range rep.Timeline {
			if c := wantHours[h.Hour]; c != [4]int{h.H2, h.H3, h.WantedH3GotH2, h.Other} {
				t.Errorf("%s: hour %s counts %+v, want %v", src, h.Hour, h, c)
			}
		}

		// Bootstrap intervals against an independent naive bootstrap.
		eu := want["EU"]
		var g *model.Group
		for i := range rep.Groups {
			if rep.Groups[i].Group == "EU" {
				g = &rep.Groups[i]
			}
		}
		for k, p := range []float64{0.9, 0.95} {
			idx := 2 + k
			lo, hi := eu.naiveBootstrap(400, 11, func(h2, h3 *[2][]float64) (float64, bool) {
				a, ok2 := balancedQuantile(h2, p)
				b, ok3 := balancedQuantile(h3, p)
				return b - a, ok2 && ok3
			})
			d := g.Diff[idx]
			if d.Insufficient || g.H2.Percentiles[idx].Insufficient {
				t.Fatalf("%s EU p%g: insufficient, no interval to compare", src, p*100)
			}
			// Monte Carlo error of a 2.5 % point with a few hundred
			// replicates, plus the TDigest shift: a quarter of the width.
			tol := 0.25*(hi-lo) + 0.5
			if math.Abs(*d.CILowMS-lo) > tol || math.Abs(*d.CIHighMS-hi) > tol {
				t.Errorf("%s EU diff p%g CI [%.2f, %.2f], naive bootstrap [%.2f, %.2f] (tolerance %.2f)", src, p*100, *d.CILowMS, *d.CIHighMS, lo, hi, tol)
			}
			lo, hi = eu.naiveBootstrap(400, 12, func(h2, _ *[2][]float64) (float64, bool) { return balancedQuantile(h2, p) })
			q := g.H2.Percentiles[idx]
			tol = 0.25*(hi-lo) + 0.5
			if math.Abs(*q.CILowMS-lo) > tol || math.Abs(*q.CIHighMS-hi) > tol {
				t.Errorf("%s EU h2 p%g CI [%.2f, %.2f], naive bootstrap [%.2f, %.2f] (tolerance %.2f)", src, p*100, *q.CILowMS, *q.CIHighMS, lo, hi, tol)
			}
		}
	}

	// Rollup and raw agree: same counts, percentiles within two rank
	// tolerances of each other (each was checked against exact above).
	raw, roll := reports[model.SourceRaw], reports[model.SourceRollup]
	for i := range raw.Groups {
		a, b := &raw.Groups[i], &roll.Groups[i]
		if a.Group != b.Group || b.Runs != a.Runs || a.Samples != b.Samples {
			t.Errorf("raw %s %d/%d vs rollup %s %d/%d", a.Group, a.Runs, a.Samples, b.Group, b.Runs, b.Samples)
		}
		if a.Paired.MedianMS != b.Paired.MedianMS || a.Availability.Share != b.Availability.Share {
			t.Errorf("%s: paired/availability differ between raw and rollup", a.Group)
		}
		// The excluded runs' section: the rollup's from run_counts, the raw
		// report's from the runs table.
		if a.DesignRuns != b.DesignRuns || !mapsEqual(a.Excluded, b.Excluded) || !mapsEqual(a.ColdRuns, b.ColdRuns) ||
			a.Availability.WantedH3 != b.Availability.WantedH3 || a.Availability.GotH3 != b.Availability.GotH3 {
			t.Errorf("%s: excluded runs differ: raw %d %v %v %d/%d, rollup %d %v %v %d/%d", a.Group,
				a.DesignRuns, a.Excluded, a.ColdRuns, a.Availability.GotH3, a.Availability.WantedH3,
				b.DesignRuns, b.Excluded, b.ColdRuns, b.Availability.GotH3, b.Availability.WantedH3)
		}
		if a.DesignRuns == 0 {
			t.Errorf("%s: no run of the design counted", a.Group)
		}
		if (a.ITT == nil) != (b.ITT == nil) {
			t.Errorf("%s: intention-to-treat view in one report only", a.Group)
		} else if a.ITT != nil && (a.ITT.H2.Runs != b.ITT.H2.Runs || a.ITT.H3.Runs != b.ITT.H3.Runs ||
			a.ITT.H2.FailedRuns != b.ITT.H2.FailedRuns || a.ITT.H3.FailedRuns != b.ITT.H3.FailedRuns) {
			t.Errorf("%s: intention-to-treat runs differ: raw %+v %+v, rollup %+v %+v", a.Group, a.ITT.H2, a.ITT.H3, b.ITT.H2, b.ITT.H3)
		}
	}
	if len(raw.Timeline) != len(roll.Timeline) {
		t.Errorf("timeline: raw %d hours, rollup %d", len(raw.Timeline), len(roll.Timeline))
	}
	for _, g := range raw.Groups {
		if g.Group == "unknown" && g.Runs == 0 {
			t.Error("unknown region has no runs")
		}
	}
	if raw.Groups[len(raw.Groups)-1].Group != "OC" || !raw.Groups[len(raw.Groups)-1].TooSmall {
		t.Errorf("smallest group %+v should be OC, flagged too small", raw.Groups[len(raw.Groups)-1].Group)
	}
	// Default source is the rollup for the default selection.
	rep, err := Run(ctx, conn, model.Options{Since: testSince, Until: testUntil})
	if err != nil || rep.Source != "rollup" {
		t.Errorf("default report: source %v, err %v; want rollup", rep.Source, err)
	}
	checkOutputs(t, raw)
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func sumInts(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

// checkOutputs checks that JSON, table and CSV are well-formed.
func checkOutputs(t *testing.T, rep *model.Report) {
	t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	var back model.Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("JSON round trip: %v", err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"version", "since", "until", "by", "groups", "timeline", "ci", "percentiles", "source"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if m["groups"] == nil || m["timeline"] == nil {
		t.Error("groups/timeline must be arrays, not null")
	}
	var tb bytes.Buffer
	if err := writeTable(&tb, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(tb.String(), "\n")
	if !strings.HasPrefix(lines[0], "h3rum report") {
		t.Errorf("table starts with %q", lines[0])
	}
	for _, g := range rep.Groups {
		if g.TooSmall && !strings.Contains(tb.String(), g.Group+" *") {
			t.Errorf("small group %s not marked in the table", g.Group)
		}
	}
	var cb bytes.Buffer
	if err := writeCSV(&cb, rep); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v", err)
	}
	if strings.Join(recs[0], ",") != strings.Join(csvHeader, ",") {
		t.Errorf("CSV header %v", recs[0])
	}
	// Estimates with too few runs for an interval are marked: "†" in the
	// table (with "—" for a difference's interval), true in the CSV.
	insufficient := 0
	for i := range rep.Groups {
		g := &rep.Groups[i]
		for _, o := range g.Outcomes() {
			if o.Stats != nil {
				for _, p := range o.Stats.Percentiles {
					insufficient += b01i(p.Insufficient)
				}
			}
		}
		for _, d := range g.Diff {
			insufficient += 2 * b01i(d.Insufficient) // diff_ms and diff_pct
		}
	}
	if got := strings.Count(tb.String(), insufficientMark) - strings.Count(tb.String(), insufficientMark+" too few runs"); got != insufficient {
		t.Errorf("%d insufficient estimates, %d marked in the table", insufficient, got)
	}
	marked := 0
	for _, r := range recs[1:] {
		marked += b01i(r[len(r)-1] == "true")
	}
	if marked != insufficient {
		t.Errorf("%d insufficient estimates, %d marked in the CSV", insufficient, marked)
	}
}

func b01i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRunsTableAnswersAsTheSamples: for every selection both answer, the
// runs table returns the very runs the samples do (runs_table.sql and
// runs.sql) — the same sample of each thinned group, each run with the
// same samples and batch order — so intervals and the paired view do not
// depend on where the runs came from; the same failures by origin and
// code (failures_table.sql and failures.sql); and the same raw point
// estimates, timeline and intention-to-treat view (points_runs.sql,
// timeline_runs.sql and itt_runs.sql against their _raw.sql). Some runs' batch requests
// all failed: with failures left out they have no sample, and neither
// query returns them.
func TestRunsTableAnswersAsTheSamples(t *testing.T) {
	conn := newDB(t)
	rows := synth.All(synth.Config{Seed: 12, Runs: 800})
	allFailed := map[uuid.UUID]bool{}
	for _, r := range rows {
		if r.Bot == 0 && len(allFailed) < 20 {
			allFailed[r.RunID] = true
		}
	}
	for i := range rows {
		if allFailed[rows[i].RunID] && rows[i].Phase == "parallel" {
			rows[i].Error, rows[i].Got, rows[i].Duration = "timeout", "unknown", 0
		}
		// Durations whose float32 bytes end in zeros, which the per-run
		// queries' packing must keep.
		if i%7 == 0 {
			rows[i].Duration = []float32{2, 0.5, 256, 1.5}[i%4]
		}
	}
	load(t, conn, rows)
	ex := synth.Exclusions(rows)
	checked := 0 // durations compared with the generated ones
	ctx := context.Background()
	sorted := func(byGroup map[string][]stats.Run) map[string][]stats.Run {
		for _, runs := range byGroup {
			slices.SortFunc(runs, func(a, b stats.Run) int {
				return cmp.Or(stats.CompareRuns(a, b), cmp.Compare(b01i(a.H3First), b01i(b.H3First)))
			})
		}
		return byGroup
	}
	for _, by := range model.Groupings() {
		for _, f := range []model.Options{{}, {IncludeFailed: true}, {IncludeBots: true}, {IncludeExcluded: true},
			{IncludeFailed: true, IncludeBots: true, IncludeExcluded: true}} {
			o := f
			o.Since, o.Until, o.By = testSince, testUntil, by
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if !query.RunsTableHolds(&o) {
				continue
			}
			o.Design.All = true
			// Every group, half of them thinned to about a third of their runs.
			var names []string
			var bounds []uint64
			for i, g := range []string{"EU", "NA", "AS", "OC", "unknown", "all", "DE", "US", "Chrome", "4g", "AS3320"} {
				names = append(names, g)
				bounds = append(bounds, sampleBound(1+2*(i%2), 1))
			}
			w := query.NewWindow(o.Since, o.Until, time.Now())
			var got [2]map[string][]stats.Run
			for k, name := range []string{"runs.sql", "runs_table.sql"} {
				st, err := prepare(name, &o, w, nil, clickhouse.Named("groups", names), clickhouse.Named("bounds", bounds),
					clickhouse.Named("bound", boundID(slices.Max(bounds))))
				if err != nil {
					t.Fatal(err)
				}
				byGroup, err := fetchRuns(ctx, conn, st, nil)
				if err != nil {
					t.Fatalf("by %s %+v: %v", by, f, err)
				}
				got[k] = sorted(byGroup)
			}
			if len(got[0]) == 0 {
				t.Fatalf("by %s %+v: no runs fetched", by, f)
			}
			// The groups not thinned hold every selected batch request's
			// duration, exactly.
			for i, g := range names {
				if bounds[i] != math.MaxUint64 {
					continue
				}
				var want, fetched []float64
				for _, r := range rows {
					if r.Phase == "parallel" && keyOf(r, by) == g && selected(r, o, ex) {
						want = append(want, float64(r.Duration))
					}
				}
				for _, run := range got[0][g] {
					fetched = slices.Concat(fetched, run.H2, run.H3, run.Fallback, run.Other)
				}
				slices.Sort(want)
				slices.Sort(fetched)
				if !slices.Equal(want, fetched) {
					t.Errorf("by %s %+v: group %s: %d durations fetched, %d selected (or not the same)", by, f, g, len(fetched), len(want))
				}
				checked += len(want)
			}
			files := []string{"failures.sql", "failures_table.sql"}
			if by == "continent" || by == "country" || by == "none" {
				files = append(files, "failures_rollup.sql")
			}
			fails := make([]map[string][]model.Failure, len(files))
			for k, name := range files {
				groups := map[string]*model.Group{}
				st, err := failuresQuery(&o, w, name)
				if err != nil {
					t.Fatal(err)
				}
				if err := failuresFrom(ctx, conn, st, func(g string) *model.Group { return groupOf(groups, g) }); err != nil {
					t.Fatalf("by %s %+v: %v", by, f, err)
				}
				fails[k] = map[string][]model.Failure{}
				for g, grp := range groups {
					fails[k][g] = grp.Failures
				}
			}
			for k := 1; k < len(files); k++ {
				if len(fails[0]) == 0 || !reflect.DeepEqual(fails[0], fails[k]) {
					t.Errorf("by %s %+v: failures from the samples %v, from %s %v", by, f, fails[0], files[k], fails[k])
				}
			}
			comparePoints(t, ctx, conn, &o, w, fmt.Sprintf("by %s %+v", by, f))
			if !maps.EqualFunc(got[0], got[1], func(a, b []stats.Run) bool {
				return slices.EqualFunc(a, b, func(x, y stats.Run) bool { return stats.CompareRuns(x, y) == 0 && x.H3First == y.H3First })
			}) {
				for g := range got[0] {
					t.Errorf("by %s %+v: group %s: %d runs from the samples, %d from the runs table", by, f, g, len(got[0][g]), len(got[1][g]))
				}
			}
		}
	}
	if checked < 1000 {
		t.Errorf("only %d durations compared with the generated samples", checked)
	}
}

// comparePoints checks that the raw point estimates from the runs table
// (points_runs.sql) equal those from the samples (points_raw.sql): the
// same groups, run and sample counts per group, outcome and batch order
// (uniq is exact at these sizes), and percentiles within the t-digest's
// error, which depends on the order values arrive in.
func comparePoints(t *testing.T, ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, what string) {
	t.Helper()
	var got [2]map[string]*model.Group
	for k, read := range []func(pointRow) error{
		func(add pointRow) error { return pointsFromSamples(ctx, conn, o, w, false, nil, nil, add) },
		func(add pointRow) error { return pointsFromRuns(ctx, conn, o, w, add) },
	} {
		groups := map[string]*model.Group{}
		if err := pointsInto(o, read, func(g string) *model.Group { return groupOf(groups, g) }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got[k] = groups
	}
	if len(got[0]) == 0 {
		t.Fatalf("%s: no point estimates", what)
	}
	// The raw timeline likewise (timeline_runs.sql and timeline_raw.sql).
	fromRuns, err := timeline(ctx, conn, o, w, false)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	st, err := prepare("timeline_raw.sql", o, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	fromSamples, err := timelineFrom(ctx, conn, st)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(fromSamples) == 0 || !slices.Equal(fromSamples, fromRuns) {
		t.Errorf("%s: timeline from the samples %+v, from the runs table %+v", what, fromSamples, fromRuns)
	}
	// The quantile curves (quantiles_runs.sql and curves.sql): each a
	// t-digest of the same durations, fed in another order.
	var curvesOf [2]map[string]*model.Group
	for k, read := range []func(add func(grp, oc, ord string, qs []float32)) error{
		func(add func(grp, oc, ord string, qs []float32)) error {
			return curvesFromSamples(ctx, conn, o, w, add)
		},
		func(add func(grp, oc, ord string, qs []float32)) error { return curvesFromRuns(ctx, conn, o, w, add) },
	} {
		curvesOf[k] = map[string]*model.Group{}
		if err := read(func(grp, oc, ord string, qs []float32) {
			g := groupOf(curvesOf[k], grp+" "+oc+" "+ord)
			g.Curves = &model.Curves{H2: make([]float64, len(qs))}
			for i, x := range qs {
				g.Curves.H2[i] = float64(x)
			}
		}); err != nil {
			t.Fatalf("%s: curves: %v", what, err)
		}
	}
	if len(curvesOf[0]) == 0 || len(curvesOf[0]) != len(curvesOf[1]) {
		t.Errorf("%s: curves of %d groups × outcomes × orders from the samples, %d from the runs table", what, len(curvesOf[0]), len(curvesOf[1]))
	}
	for key, a := range curvesOf[0] {
		b := curvesOf[1][key]
		if b == nil {
			t.Errorf("%s: no curve of %s from the runs table", what, key)
			continue
		}
		for i, p := range a.Curves.H2 {
			if q := b.Curves.H2[i]; math.Abs(p-q) > 0.5+0.03*math.Abs(p) {
				t.Errorf("%s: curve of %s at p%g: %.3f ms from the samples, %.3f from the runs table", what, key, query.CurveGrid[i], p, q)
			}
		}
	}
	// The trend's cells (quantiles_runs.sql and trend.sql): the same runs, and
	// the quantile grid within the t-digest's order effect.
	type trendCell struct {
		runs uint64
		qs   []float32
	}
	var cellsOf [2]map[string]trendCell
	for k, read := range []func(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, hourly bool, add func(t uint32, grp, oc, ord string, runs uint64, qs []float32)) error{
		trendFromSamples, trendFromRuns,
	} {
		cellsOf[k] = map[string]trendCell{}
		if err := read(ctx, conn, o, w, true, func(t uint32, grp, oc, ord string, runs uint64, qs []float32) {
			cellsOf[k][fmt.Sprint(t, grp, oc, ord)] = trendCell{runs, qs}
		}); err != nil {
			t.Fatalf("%s: trend: %v", what, err)
		}
	}
	if len(cellsOf[0]) == 0 || len(cellsOf[0]) != len(cellsOf[1]) {
		t.Errorf("%s: %d trend cells from the samples, %d from the runs table", what, len(cellsOf[0]), len(cellsOf[1]))
	}
	for key, a := range cellsOf[0] {
		b, ok := cellsOf[1][key]
		if !ok || a.runs != b.runs || len(a.qs) != len(b.qs) {
			t.Errorf("%s: trend cell %s: %d runs from the samples, %d from the runs table (present %v)", what, key, a.runs, b.runs, ok)
			continue
		}
		for i, p := range a.qs {
			if q := b.qs[i]; math.Abs(float64(p-q)) > 0.5+0.03*math.Abs(float64(p)) {
				t.Errorf("%s: trend cell %s at level %g: %.3f ms from the samples, %.3f from the runs table", what, key, query.TrendGrid[i], p, q)
				break
			}
		}
	}
	// And the intention-to-treat view (itt_runs.sql and itt_raw.sql).
	var itts [2]map[string]*model.Group
	for k, name := range []string{"itt_raw.sql", "itt_runs.sql"} {
		st, err := prepare(name, o, w, nil)
		if err != nil {
			t.Fatal(err)
		}
		groups := map[string]*model.Group{}
		if err := ittFrom(ctx, conn, st, func(g string) *model.Group { return groupOf(groups, g) }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		itts[k] = groups
	}
	if len(itts[0]) == 0 || len(itts[0]) != len(itts[1]) {
		t.Fatalf("%s: intention-to-treat groups from the samples %d, from the runs table %d", what, len(itts[0]), len(itts[1]))
	}
	for name, a := range itts[0] {
		b := itts[1][name]
		if b == nil || b.ITT == nil {
			t.Errorf("%s: group %s has no intention-to-treat view from the runs table", what, name)
			continue
		}
		for _, side := range []struct {
			origin string
			x, y   *model.ITTStats
		}{{"h2", a.ITT.H2, b.ITT.H2}, {"h3", a.ITT.H3, b.ITT.H3}} {
			x, y := side.x, side.y
			if (x == nil) != (y == nil) {
				t.Errorf("%s: group %s sent to %s: present %v from the samples, %v from the runs table", what, name, side.origin, x != nil, y != nil)
				continue
			}
			if x == nil {
				continue
			}
			if x.Runs != y.Runs || x.Samples != y.Samples || x.Failed != y.Failed || x.FailedRuns != y.FailedRuns {
				t.Errorf("%s: group %s sent to %s: runs, samples, failed, failed runs %d %d %d %d from the samples; %d %d %d %d from the runs table",
					what, name, side.origin, x.Runs, x.Samples, x.Failed, x.FailedRuns, y.Runs, y.Samples, y.Failed, y.FailedRuns)
			}
			for j := range x.Percentiles {
				p, q := x.Percentiles[j].MS, y.Percentiles[j].MS
				if math.Abs(p-q) > 0.5+0.03*math.Abs(p) {
					t.Errorf("%s: group %s sent to %s p%g: %.3f ms from the samples, %.3f from the runs table",
						what, name, side.origin, x.Percentiles[j].P, p, q)
				}
			}
		}
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got[0])), slices.Sorted(maps.Keys(got[1]))) {
		t.Fatalf("%s: groups from the samples %v, from the runs table %v", what,
			slices.Sorted(maps.Keys(got[0])), slices.Sorted(maps.Keys(got[1])))
	}
	for name, a := range got[0] {
		b := got[1][name]
		if a.Runs != b.Runs || a.Samples != b.Samples {
			t.Errorf("%s: group %s: %d runs, %d samples from the samples; %d, %d from the runs table",
				what, name, a.Runs, a.Samples, b.Runs, b.Samples)
		}
		for i, oa := range a.Outcomes() {
			ob := b.Outcomes()[i]
			if (oa.Stats == nil) != (ob.Stats == nil) {
				t.Errorf("%s: group %s %s: present %v from the samples, %v from the runs table",
					what, name, oa.Outcome, oa.Stats != nil, ob.Stats != nil)
				continue
			}
			if oa.Stats == nil {
				continue
			}
			x, y := oa.Stats, ob.Stats
			if x.Runs != y.Runs || x.Samples != y.Samples || x.RunsByOrder != y.RunsByOrder {
				t.Errorf("%s: group %s %s: runs %d (%+v), samples %d from the samples; %d (%+v), %d from the runs table",
					what, name, oa.Outcome, x.Runs, x.RunsByOrder, x.Samples, y.Runs, y.RunsByOrder, y.Samples)
			}
			for j := range x.Percentiles {
				p, q := x.Percentiles[j].MS, y.Percentiles[j].MS
				if math.Abs(p-q) > 0.5+0.03*math.Abs(p) {
					t.Errorf("%s: group %s %s p%g: %.3f ms from the samples, %.3f from the runs table",
						what, name, oa.Outcome, x.Percentiles[j].P, p, q)
				}
			}
		}
	}
}

// A report whose window runs to the present reads its current hour from
// the rollup, which holds every row stored so far: the same counts as the
// raw rows of that partial hour (read when the window ended in the past)
// and as the raw report.
func TestReportToThePresent(t *testing.T) {
	conn := newDB(t)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// The last run at 05:29: the current hour, 05:00–06:00, is half full.
	load(t, conn, synth.All(synth.Config{Seed: 11, Runs: 600, Start: start, Span: 5*time.Hour + 30*time.Minute}))
	since, until := start.Add(30*time.Minute), start.Add(5*time.Hour+40*time.Minute)
	if w := query.NewWindow(since, until, until); w == query.NewWindow(since, until, until.Add(time.Minute)) {
		t.Fatalf("window to the present %+v: the current hour is not the rollup's", w)
	}
	ctx := context.Background()
	reports := map[string]*model.Report{}
	for name, o := range map[string]model.Options{
		"to the present":    {Since: since, Until: until, Now: until, Source: model.SourceRollup, Replicates: -1},
		"ended in the past": {Since: since, Until: until, Now: until.Add(time.Minute), Source: model.SourceRollup, Replicates: -1},
		"raw":               {Since: since, Until: until, Now: until, Source: model.SourceRaw, Replicates: -1},
	} {
		rep, err := Run(ctx, conn, o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		reports[name] = rep
	}
	raw := reports["raw"]
	if len(raw.Groups) == 0 {
		t.Fatal("the raw report has no groups")
	}
	for _, name := range []string{"to the present", "ended in the past"} {
		rep := reports[name]
		if len(rep.Groups) != len(raw.Groups) {
			t.Fatalf("%s: %d groups, raw %d", name, len(rep.Groups), len(raw.Groups))
		}
		for i := range raw.Groups {
			a, b := &raw.Groups[i], &rep.Groups[i]
			if a.Group != b.Group || a.Samples != b.Samples || b.Runs != a.Runs {
				t.Errorf("%s: %s %d runs, %d samples; raw %s %d, %d", name, b.Group, b.Runs, b.Samples, a.Group, a.Runs, a.Samples)
			}
			if a.ITT == nil || b.ITT == nil || a.ITT.H3 == nil || b.ITT.H3 == nil || a.ITT.H3.Samples != b.ITT.H3.Samples {
				t.Errorf("%s %s: intention-to-treat H3 samples differ from the raw report's", name, b.Group)
			}
		}
		var n, m int
		for _, h := range rep.Timeline {
			n += h.H2 + h.H3
		}
		for _, h := range raw.Timeline {
			m += h.H2 + h.H3
		}
		if n != m || n == 0 {
			t.Errorf("%s: the timeline holds %d h2 and h3 samples, raw %d", name, n, m)
		}
		// The trend: merged from the rollup's t-digests (and raw rows at
		// the edges), its runs counted from the runs table, against the
		// raw report's from the runs table's requests.
		sameTrend(t, name, rep.Trend, raw.Trend)
		trendAvailabilityAddsUp(t, name, rep)
		// The curves: merged from the rollup's t-digests against the runs
		// table's requests.
		for i := range raw.Groups {
			a, b := raw.Groups[i].Curves, rep.Groups[i].Curves
			if a == nil || b == nil || len(a.H2) != len(b.H2) || len(a.H3) != len(b.H3) || len(a.H3) == 0 {
				t.Fatalf("%s %s: curves %+v, raw %+v", name, raw.Groups[i].Group, b, a)
			}
			for k := range a.H3 {
				for _, c := range [][2]float64{{a.H2[k], b.H2[k]}, {a.H3[k], b.H3[k]}} {
					if math.Abs(c[0]-c[1]) > 1+0.03*c[0] {
						t.Errorf("%s %s: curve at %g %%: %.3f ms, raw %.3f", name, raw.Groups[i].Group, a.Levels[k], c[1], c[0])
					}
				}
			}
		}
	}
}

// sameTrend checks a trend from the rollup against one from raw rows:
// the same windows, groups, run counts and availability per window, the
// differences within the t-digests' error.
func sameTrend(t *testing.T, name string, got, want *model.Trend) {
	t.Helper()
	if got == nil || want == nil || len(got.Windows) != len(want.Windows) || len(got.Groups) != len(want.Groups) || len(want.Groups) == 0 {
		t.Fatalf("%s: trend %+v, raw %+v", name, got, want)
	}
	points, avail := 0, 0
	for i, g := range got.Groups {
		w := want.Groups[i]
		if g.Group != w.Group || len(g.Points) != len(w.Points) {
			t.Fatalf("%s: trend group %s of %d points, raw %s of %d", name, g.Group, len(g.Points), w.Group, len(w.Points))
		}
		for k, p := range g.Points {
			q := w.Points[k]
			if p.RunsH2 != q.RunsH2 || p.RunsH3 != q.RunsH3 {
				t.Errorf("%s: trend %s window %d: %d/%d runs, raw %d/%d", name, g.Group, k, p.RunsH2, p.RunsH3, q.RunsH2, q.RunsH3)
			}
			if a, b := p.Availability, q.Availability; (a == nil) != (b == nil) || a != nil && (a.WantedH3 != b.WantedH3 || a.GotH3 != b.GotH3) {
				t.Errorf("%s: trend %s window %d: availability %+v, raw %+v", name, g.Group, k, a, b)
			} else if a != nil {
				avail++
			}
			for j, d := range p.Diff {
				e := q.Diff[j]
				if (d.MS == nil) != (e.MS == nil) {
					t.Errorf("%s: trend %s window %d p%g: %v, raw %v", name, g.Group, k, d.P, d.MS, e.MS)
					continue
				}
				if d.MS != nil {
					points++
					if math.Abs(*d.MS-*e.MS) > 1+0.03*math.Abs(*e.MS) {
						t.Errorf("%s: trend %s window %d p%g: %.3f ms, raw %.3f", name, g.Group, k, d.P, *d.MS, *e.MS)
					}
				}
			}
		}
	}
	if points == 0 {
		t.Errorf("%s: no trend point has a difference to compare", name)
	}
	if avail == 0 {
		t.Errorf("%s: no trend point has an HTTP/3 availability", name)
	}
}

// trendAvailabilityAddsUp checks that a trend's availability per window
// sums, over the windows, to its group's availability per run.
func trendAvailabilityAddsUp(t *testing.T, name string, rep *model.Report) {
	t.Helper()
	for _, tg := range rep.Trend.Groups {
		var wanted, got int
		for _, p := range tg.Points {
			if p.Availability != nil {
				wanted, got = wanted+p.Availability.WantedH3, got+p.Availability.GotH3
			}
		}
		for _, g := range rep.Groups {
			if g.Group == tg.Group && (g.Availability == nil || g.Availability.WantedH3 != wanted || g.Availability.GotH3 != got) {
				t.Errorf("%s: trend %s's windows hold %d/%d runs with all H3, the group %+v", name, tg.Group, got, wanted, g.Availability)
			}
		}
	}
}
