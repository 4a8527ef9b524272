package model

import (
	"context"
	"math"

	"github.com/h3rum/h3rum/queries/stats"
)

// Analyse fills g from its fetched runs: exact percentiles where Settle
// allows, the paired view, and the cluster bootstrap's intervals
// (stats.Bootstrap) of every sufficient percentile and difference and of
// the availability. An interval is the replicates' 2.5–97.5 % range,
// shifted by the gap between the reported estimate (ClickHouse's, or
// exact) and the estimate on the fetched runs, and scaled when the runs
// are a sample of the group's (m-out-of-n bootstrap).
func Analyse(ctx context.Context, g *Group, runs []stats.Run, o *Options) {
	population := 0
	if g.Sampled {
		population = g.Runs
	}
	Apply(g, runs, Resample(ctx, g.Group, runs, population, o))
}

// Resampled is the bootstrap of a group's fetched runs, the part of
// Analyse that reads the runs alone: it may run before the group's point
// estimates are in, which Apply then reads.
type Resampled struct {
	b  *stats.Bootstrap
	iv *stats.Intervals // nil without intervals (none wanted, or ctx ended)
}

// Resample bootstraps runs, the fetched runs (sorted, stats.CompareRuns)
// of the group named name, which are a uniform sample of population runs
// when population exceeds them (0: all of them).
func Resample(ctx context.Context, name string, runs []stats.Run, population int, o *Options) *Resampled {
	b := stats.NewBootstrap(runs)
	iv, err := b.Intervals(ctx, stats.Config{Replicates: o.Replicates, Seed: o.Seed, Stream: name, Population: population})
	if err != nil {
		iv = nil // the caller reports ctx's error
	}
	return &Resampled{b: b, iv: iv}
}

// Apply fills g from its fetched runs and their bootstrap r (Resample):
// what Analyse does once the point estimates are in the group.
func Apply(g *Group, runs []stats.Run, r *Resampled) {
	Settle(g, runs)
	b, iv := r.b, r.iv
	if p := b.Paired(); p != nil {
		h := stats.NewHistogram(p.Diffs)
		for i := range h.Edges {
			h.Edges[i] = Round3(h.Edges[i])
		}
		g.Paired = &Paired{
			Runs:        len(p.Diffs),
			MedianMS:    Round3(p.Median),
			P90MS:       Round3(p.P90),
			H3WonShare:  math.Round(p.Won*1e6) / 1e6,
			H3TieShare:  math.Round(p.Tie*1e6) / 1e6,
			H3LostShare: math.Round(p.Lost*1e6) / 1e6,
			Histogram:   Histogram{Edges: h.Edges, Counts: h.Counts},
		}
		for k, name := range OrderNames() {
			po := PairedOrder{Order: name, Runs: p.ByOrder[k].Runs}
			if po.Runs > 0 {
				po.MedianMS = Ptr(Round3(p.ByOrder[k].Median))
			}
			g.Paired.ByOrder = append(g.Paired.ByOrder, po)
		}
	}
	g.Availability = RequestAvailability(g)
	if g.H2 != nil && g.H3 != nil {
		g.Diff = PointDiffs(g.H2, g.H3)
	}
	if iv == nil {
		return
	}
	for i := range iv.H2 {
		if g.H2 != nil && !g.H2.Percentiles[i].Insufficient {
			p := &g.H2.Percentiles[i]
			p.CILowMS, p.CIHighMS = around(iv.H2[i], p.MS)
		}
		if g.H3 != nil && !g.H3.Percentiles[i].Insufficient {
			p := &g.H3.Percentiles[i]
			p.CILowMS, p.CIHighMS = around(iv.H3[i], p.MS)
		}
		if len(g.Diff) == len(iv.Diff) && !g.Diff[i].Insufficient {
			d := &g.Diff[i]
			d.CILowMS, d.CIHighMS = around(iv.Diff[i], d.MS)
			d.CILowPct, d.CIHighPct = around(iv.DiffPct[i], d.Pct)
		}
	}
	if p := g.Paired; p != nil {
		p.MedianCILowMS, p.MedianCIHighMS = around(iv.PairedMedian, p.MedianMS)
		p.P90CILowMS, p.P90CIHighMS = around(iv.PairedP90, p.P90MS)
		lo, hi := around(iv.PairedWon, b.Paired().Won)
		p.H3WonCILow, p.H3WonCIHigh = roundShare(lo), roundShare(hi)
	}
	if a := g.Availability; a != nil {
		if a.WantedH3 > 0 {
			lo, hi := around(iv.Availability, a.Share)
			a.CILow, a.CIHigh = clamp01(roundShare(lo)), clamp01(roundShare(hi))
		}
		a.Share = math.Round(a.Share*1e6) / 1e6
	}
}

// around is iv mapped onto the reported estimate est, rounded as the
// report's figures are; nil without an interval.
func around(iv stats.Interval, est float64) (lo, hi *float64) {
	l, h, ok := iv.Around(est)
	if !ok {
		return nil, nil
	}
	return Ptr(l), Ptr(h)
}

func roundShare(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := math.Round(*p*1e6) / 1e6
	return &v
}

func clamp01(p *float64) *float64 {
	if p != nil {
		*p = min(max(*p, 0), 1)
	}
	return p
}

// RequestAvailability is the share of requests meant for H3 that used h3, from
// the group's sample counts (nil when nothing was meant for H3); the
// bootstrap adds its interval.
func RequestAvailability(g *Group) *Availability {
	if g.H3 == nil && g.WantedH3GotH2 == nil {
		return nil
	}
	a := &Availability{Unit: "requests"}
	if g.H3 != nil {
		a.GotH3 = g.H3.Samples
	}
	a.WantedH3 = a.GotH3
	if g.WantedH3GotH2 != nil {
		a.WantedH3 += g.WantedH3GotH2.Samples
	}
	if a.WantedH3 > 0 {
		a.Share = float64(a.GotH3) / float64(a.WantedH3)
	}
	return a
}

// finishGroup sets the comparison fields that need both protocols.
func finishGroup(g *Group, o *Options) {
	if g.Handshakes == nil {
		g.Handshakes = []Handshake{}
	}
	g.TooSmall = g.H2 == nil || g.H3 == nil || g.H2.TooSmall || g.H3.TooSmall
	if g.Availability == nil {
		g.Availability = RequestAvailability(g) // per request; the complete report has it per run
	}
	if g.H2 != nil && g.H3 != nil && len(g.Diff) == 0 {
		// Bootstrap did not run (no intervals wanted): point differences only.
		g.Diff = PointDiffs(g.H2, g.H3)
	}
}

// PointDiffs are H3 − H2 at each percentile, without intervals.
func PointDiffs(h2, h3 *Stats) []Diff {
	out := make([]Diff, len(percentiles))
	for i, p := range percentiles {
		a, b := h2.Percentiles[i], h3.Percentiles[i]
		out[i] = Diff{P: p, MS: Round3(b.MS - a.MS), Pct: Round3(stats.PctChange(a.MS, b.MS)), Insufficient: a.Insufficient || b.Insufficient}
	}
	return out
}
