package queries

import (
	"cmp"
	"context"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/h3rum/h3rum/ingest/store"
)

// runSamples are one run's selected samples, split by outcome. Durations
// are sorted so that results do not depend on the order ClickHouse
// returned them in.
type runSamples struct {
	h2, h3       []float64 // every selected sample
	fbDur, other []float64 // the fallback and other outcomes, for exact percentiles
	h2Par, h3Par []float64 // parallel batches only, for the paired view
	fbPar        int       // parallel requests to the H3 origin that used h2/h1
	gotH3, fb    int       // selected requests to the H3 origin: got h3 / got h2 or h1
	h3First      bool      // the H3 batch started first (param_order)
}

func splitRun(d []float32, oc, par []uint8) runSamples {
	n := min(len(d), len(oc), len(par))
	// The run's slices share one allocation: count, then fill.
	var cnt [6]int // h2, h3, fbDur, other, h2Par, h3Par
	for i := range n {
		k := kindOf(oc[i])
		cnt[k]++
		if par[i] == 1 && k < 2 {
			cnt[4+k]++
		}
	}
	buf := make([]float64, cnt[0]+cnt[1]+cnt[2]+cnt[3]+cnt[4]+cnt[5])
	var r runSamples
	all := [6]*[]float64{&r.h2, &r.h3, &r.fbDur, &r.other, &r.h2Par, &r.h3Par}
	for k, s := range all {
		if cnt[k] > 0 {
			*s, buf = buf[:0:cnt[k]], buf[cnt[k]:]
		}
	}
	for i := range n {
		x, k, p := float64(d[i]), kindOf(oc[i]), par[i] == 1
		*all[k] = append(*all[k], x)
		switch {
		case k < 2 && p:
			*all[4+k] = append(*all[4+k], x)
		case k == 2 && p:
			r.fbPar++
		}
		switch k {
		case 1:
			r.gotH3++
		case 2:
			r.fb++
		}
	}
	for _, s := range all {
		slices.Sort(*s)
	}
	return r
}

func b01int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// intN is rand.New(src).IntN(n) for n > 0 (math/rand/v2's unbiased
// multiply-and-shift; its 32-bit path yields the same values): the draws
// of every replicate, a quarter of the bootstrap's time, without the call
// through the Source interface.
func intN(src *rand.PCG, n int) int {
	u := uint64(n)
	if u&(u-1) == 0 {
		return int(src.Uint64() & (u - 1))
	}
	hi, lo := bits.Mul64(src.Uint64(), u)
	if lo < u {
		thresh := -u % u
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), u)
		}
	}
	return int(hi)
}

// kindOf indexes an outcome code for splitRun: h2, h3, the fallback,
// other.
func kindOf(oc uint8) int {
	switch store.Outcome(oc) {
	case store.OutcomeH2:
		return 0
	case store.OutcomeH3:
		return 1
	case store.OutcomeWantedH3GotH2:
		return 2
	}
	return 3
}

func compareRuns(a, b runSamples) int {
	return cmp.Or(
		slices.Compare(a.h2, b.h2),
		slices.Compare(a.h3, b.h3),
		slices.Compare(a.fbDur, b.fbDur),
		slices.Compare(a.other, b.other),
		slices.Compare(a.h2Par, b.h2Par),
		slices.Compare(a.h3Par, b.h3Par),
		cmp.Compare(a.fbPar, b.fbPar),
		cmp.Compare(a.fb, b.fb),
	)
}

// pairedEligible reports whether a run enters the paired view: both
// parallel batches present and its H3 batch used h3 throughout.
func (r *runSamples) pairedEligible() bool {
	return len(r.h2Par) > 0 && len(r.h3Par) > 0 && r.fbPar == 0
}

// quantile7 is the linear-interpolation quantile of sorted xs (Hyndman and
// Fan's type 7, numpy's default); q in [0, 1].
func quantile7(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * q
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// obs is one observation and the index of the run it belongs to.
type obs struct {
	v   float64
	run int32
}

// weightedQuantiles computes type-7 quantiles of the data set in which
// each observation of xs (sorted by v) appears w[run] times: one bootstrap
// replicate without materialising it. n is the replicate's size
// (replicateSize: a sum over runs, not over observations, which halved
// the bootstrap's time). qs must be ascending. The walk to qs[k] starts at
// starts[k], a point of xs whose weight below is known (a checkpoint), and
// goes up or down from there; with starts nil, the walks to quantiles up
// to the median start at the bottom, the others at the top. It returns
// false when the replicate has no observation.
func weightedQuantiles(xs []obs, n int64, w []int32, qs []float64, out []float64, starts []walkStart) bool {
	if n == 0 {
		return false
	}
	if starts != nil {
		for k, q := range qs {
			lo, frac := position(n, q)
			i, cum := starts[k].at, starts[k].cum // xs[i] covers expanded positions [cum, cum+w)
			for cum > lo {
				i--
				cum -= int64(w[xs[i].run])
			}
			for cum+int64(w[xs[i].run]) <= lo {
				cum += int64(w[xs[i].run])
				i++
			}
			out[k] = interpolate(xs, w, i, frac, lo+1 >= cum+int64(w[xs[i].run]))
		}
		return true
	}
	// Quantiles up to the median are found walking up from the smallest
	// observation, the others walking down from the largest, so the tail
	// percentiles cost a short walk instead of a whole pass.
	i, cum := 0, int64(0) // xs[i] covers expanded positions [cum, cum+w)
	k := 0
	for ; k < len(qs) && qs[k] <= 0.5; k++ {
		lo, frac := position(n, qs[k])
		for cum+int64(w[xs[i].run]) <= lo {
			cum += int64(w[xs[i].run])
			i++
		}
		out[k] = interpolate(xs, w, i, frac, lo+1 >= cum+int64(w[xs[i].run]))
	}
	j, top := len(xs)-1, n // xs[j] covers expanded positions [top-w, top)
	for h := len(qs) - 1; h >= k; h-- {
		lo, frac := position(n, qs[h])
		for top-int64(w[xs[j].run]) > lo {
			top -= int64(w[xs[j].run])
			j--
		}
		out[h] = interpolate(xs, w, j, frac, lo+1 >= top)
	}
	return true
}

// position is the 0-based expanded position of quantile q among n values
// and the fraction towards the next one (type 7).
func position(n int64, q float64) (lo int64, frac float64) {
	h := float64(n-1) * q
	lo = int64(math.Floor(h))
	return lo, h - float64(lo)
}

// interpolate returns the value at position lo+frac, where xs[i] holds
// position lo and next says position lo+1 lies in a later observation
// (the next one with a non-zero weight).
func interpolate(xs []obs, w []int32, i int, frac float64, next bool) float64 {
	a := xs[i].v
	if frac == 0 || !next {
		return a
	}
	for j := i + 1; j < len(xs); j++ {
		if w[xs[j].run] > 0 {
			return a + frac*(xs[j].v-a)
		}
	}
	return a
}

// runCounts returns the runs that have observations in xs, in run order,
// and how many each has; m is the number of runs.
func runCounts(xs []obs, m int) (runs, cnt []int32) {
	dense := make([]int32, m)
	for _, x := range xs {
		dense[x.run]++
	}
	for r, c := range dense {
		if c > 0 {
			runs, cnt = append(runs, int32(r)), append(cnt, c)
		}
	}
	return runs, cnt
}

// replicateSize is how many observations a replicate with run weights w
// holds, of a series whose runs have cnt observations each (runCounts):
// a sum over those runs only, as each batch order's series holds about
// half of them.
func replicateSize(runs, cnt, w []int32) int64 {
	var n int64
	for i, r := range runs {
		n += int64(cnt[i]) * int64(w[r])
	}
	return n
}

// runSizes are what a run adds to a replicate's sizes (how many
// observations of each series it holds) every time it is drawn.
type runSizes struct {
	h3First             int            // 1 for the H3 batch first (orderH3First), else 0
	h2, h3, paired, won int32          // observations in x2, x3, pd and pdWon
	gotH3, wantH3       int32          // availability's requests
	below2, below3      [nChecks]int32 // observations in x2 and x3 below each of their order's checkpoints
}

// repSizes are a replicate's sums of its runs' sizes, per batch order.
type repSizes struct {
	n2, n3, np, nw orderSizes // observations in x2, x3, pd and pdWon
	got, want      int64      // availability's requests (both orders)
	below2, below3 [nChecks]orderSizes
}

// replicateSizes sums the sizes of a replicate with run weights w, after
// its draws: one pass in run order into local sums, the batch order
// selected by arithmetic rather than by index or branch. Adding each
// draw's sizes into per-order arrays as it was drawn took an eighth more
// of the whole bootstrap (BenchmarkAnalyse).
func replicateSizes(w []int32, per []runSizes) repSizes {
	var a2, a3, ap, aw, b2, b3, bp, bw int64 // a: every run, b: the h3first ones
	var s repSizes
	// No test for c == 0: a third of the runs, at random, is a branch
	// mispredicted a third of the time.
	for r, c := range w[:len(per)] {
		p := &per[r]
		k, f := int64(c), int64(p.h3First)
		s2, s3, sp, sw := k*int64(p.h2), k*int64(p.h3), k*int64(p.paired), k*int64(p.won)
		b2, b3, bp, bw = b2+f*s2, b3+f*s3, bp+f*sp, bw+f*sw
		a2, a3, ap, aw = a2+s2, a3+s3, ap+sp, aw+sw
		s.got += k * int64(p.gotH3)
		s.want += k * int64(p.wantH3)
		for j := range nChecks {
			s.below2[j][p.h3First] += k * int64(p.below2[j])
			s.below3[j][p.h3First] += k * int64(p.below3[j])
		}
	}
	s.n2, s.n3, s.np, s.nw = orderSizes{a2 - b2, b2}, orderSizes{a3 - b3, b3}, orderSizes{ap - bp, bp}, orderSizes{aw - bw, bw}
	return s
}

// packedSizes are a run's sizes, or a replicate's sums of them, in 16-bit
// lanes: h2 and h3 per batch order, paired and won per batch order, gotH3
// and wantH3, then for each checkpoint below2 and below3 per batch order.
// Adding a drawn run's is eight additions, where summing after the draws
// is a pass over every run (BenchmarkAnalyse 45 → 34 ms with the sizes
// packed, → 31 ms with the weight below one checkpoint too; 29.3 → 24.8 ms
// with one checkpoint per percentile, whose walks no longer cover up to
// half the observations).
type packedSizes [3 + nChecks]uint64

const laneBits = 16

// packLimit bounds a lane's sum; a test lowers it to take the other path.
var packLimit int64 = 1 << laneBits

// add adds p's words one by one: as a loop it was slower than before the
// checkpoints (BenchmarkAnalyse), the array being kept in memory. A word
// fewer does not compile; one more is missed, and TestPackedSizesMatchSums
// fails.
func (s *packedSizes) add(p *packedSizes) {
	s[0] += p[0]
	s[1] += p[1]
	s[2] += p[2]
	s[3] += p[3]
	s[4] += p[4]
	s[5] += p[5]
	s[6] += p[6]
	s[7] += p[7]
}

func lane(word uint64, i int) int64 { return int64(word >> (laneBits * i) & (1<<laneBits - 1)) }

func (s *packedSizes) unpack() repSizes {
	r := repSizes{
		n2: orderSizes{lane(s[0], 0), lane(s[0], 1)}, n3: orderSizes{lane(s[0], 2), lane(s[0], 3)},
		np: orderSizes{lane(s[1], 0), lane(s[1], 1)}, nw: orderSizes{lane(s[1], 2), lane(s[1], 3)},
		got: lane(s[2], 0), want: lane(s[2], 1),
	}
	for j := range nChecks {
		c := s[3+j]
		r.below2[j] = orderSizes{lane(c, 0), lane(c, 1)}
		r.below3[j] = orderSizes{lane(c, 2), lane(c, 3)}
	}
	return r
}

// packSizes packs every run's sizes, or returns nil when a replicate's
// sum could overflow a lane: len(per) draws of the largest size (a count
// below a checkpoint is at most its series' size).
func packSizes(per []runSizes) []packedSizes {
	var most int64
	for _, p := range per {
		most = max(most, int64(p.h2), int64(p.h3), int64(p.paired), int64(p.won), int64(p.gotH3), int64(p.wantH3))
	}
	if most*int64(len(per)) >= packLimit {
		return nil
	}
	out := make([]packedSizes, len(per))
	for r, p := range per {
		at := func(v int32, i int) uint64 { return uint64(v) << (laneBits * i) }
		o := p.h3First // lane of the batch order
		out[r] = packedSizes{at(p.h2, o) | at(p.h3, 2+o), at(p.paired, o) | at(p.won, 2+o), at(p.gotH3, 0) | at(p.wantH3, 1)}
		for j := range nChecks {
			out[r][3+j] = at(p.below2[j], o) | at(p.below3[j], 2+o)
		}
	}
	return out
}

// interval returns the 2.5 % and 97.5 % points of bootstrap replicates,
// or ok false when fewer than half the replicates produced a value.
func interval(reps []float64, want int) (lo, hi float64, ok bool) {
	if len(reps) < 2 || len(reps)*2 < want {
		return 0, 0, false
	}
	slices.Sort(reps)
	return quantile7(reps, 0.025), quantile7(reps, 0.975), true
}

// analyse computes, from a group's runs, exact percentiles where settle
// allows, the paired view, the availability interval and the bootstrap
// intervals of every sufficient percentile and difference.
//
// Method: cluster (run) bootstrap. A replicate draws len(runs) runs with
// replacement and recomputes every statistic over all samples of the drawn
// runs, so the correlation between requests of one run (they share a
// connection) and between a run's H2 and H3 batches is kept. The interval
// is the replicates' 2.5–97.5 % range, shifted by the gap between the
// ClickHouse point estimate and the exact estimate on the fetched runs.
// When the runs are a sample of m out of n, deviations are scaled by
// sqrt(m/n) (m-out-of-n bootstrap) to estimate the full-data interval.
func analyse(ctx context.Context, g *Group, runs []runSamples, o *Options) {
	settle(g, runs)
	m := len(runs)
	won := func(d float64) bool { return d <= -PairTieMS }
	tie := func(d float64) bool { return math.Abs(d) < PairTieMS }
	lost := func(d float64) bool { return d >= PairTieMS }
	var x2, x3, pd orderedObs
	var pdWon, pdTie, pdLost orderedObs // the paired differences won, tied and lost
	var diffs []float64                 // paired differences, for the histogram
	var byOrder [2][]float64            // paired differences of h2first and h3first runs
	per := make([]runSizes, m)
	// Each series' observations, counted first so that each is allocated
	// once.
	var n2, n3, np [2]int
	for r := range runs {
		k := b01int(runs[r].h3First)
		n2[k] += len(runs[r].h2)
		n3[k] += len(runs[r].h3)
		np[k] += b01int(runs[r].pairedEligible())
	}
	for k := range 2 {
		x2.xs[k] = make([]obs, 0, n2[k])
		x3.xs[k] = make([]obs, 0, n3[k])
		pd.xs[k] = make([]obs, 0, np[k])
	}
	for r := range runs {
		run := &runs[r]
		p := &per[r]
		p.h2, p.h3, p.gotH3, p.wantH3 = int32(len(run.h2)), int32(len(run.h3)), int32(run.gotH3), int32(run.gotH3+run.fb)
		p.h3First = b01int(run.h3First)
		for _, v := range run.h2 {
			x2.add(v, int32(r), run.h3First)
		}
		for _, v := range run.h3 {
			x3.add(v, int32(r), run.h3First)
		}
		if run.pairedEligible() {
			d := quantile7(run.h3Par, 0.5) - quantile7(run.h2Par, 0.5)
			pd.add(d, int32(r), run.h3First)
			p.paired = 1
			if won(d) {
				p.won = 1
			}
			for _, c := range []struct {
				sub  *orderedObs
				pred func(float64) bool
			}{{&pdWon, won}, {&pdTie, tie}, {&pdLost, lost}} {
				if c.pred(d) {
					c.sub.add(d, int32(r), run.h3First)
				}
			}
			diffs = append(diffs, d)
			k := orderH2First
			if run.h3First {
				k = orderH3First
			}
			byOrder[k] = append(byOrder[k], d)
		}
	}
	byValue := func(a, b obs) int { return cmp.Or(cmp.Compare(a.v, b.v), cmp.Compare(a.run, b.run)) }
	x2.done(m, byValue)
	x3.done(m, byValue)
	for _, o := range []*orderedObs{&pd, &pdWon, &pdTie, &pdLost} {
		o.done(m, byValue)
	}

	qs := make([]float64, len(percentiles))
	for i, p := range percentiles {
		qs[i] = p / 100
	}
	pairedQs := []float64{0.5, 0.9}
	// A replicate's walk to each percentile starts at a checkpoint near it.
	x2.checkAt(qs)
	x3.checkAt(qs)
	x2.countBelow(func(r int32) *[nChecks]int32 { return &per[r].below2 })
	x3.countBelow(func(r int32) *[nChecks]int32 { return &per[r].below3 })
	unit := make([]int32, m)
	for i := range unit {
		unit[i] = 1
	}
	base2, base3 := make([]float64, len(qs)), make([]float64, len(qs))
	has2 := x2.quantiles(unit, x2.sizes(unit), nil, qs, base2)
	has3 := x3.quantiles(unit, x3.sizes(unit), nil, qs, base3)
	basePaired := make([]float64, 2)
	pdAll := pd.sizes(unit)
	hasPaired := pd.quantiles(unit, pdAll, nil, pairedQs, basePaired)
	baseWon, _ := balancedShare(pdWon.sizes(unit), pdAll)
	var gotAll, wantAll int64
	for _, p := range per {
		gotAll, wantAll = gotAll+int64(p.gotH3), wantAll+int64(p.wantH3)
	}
	hasAvail := wantAll > 0
	baseAvail := float64(gotAll) / float64(max(wantAll, 1))

	if hasPaired {
		tieShare, _ := balancedShare(pdTie.sizes(unit), pdAll)
		lostShare, _ := balancedShare(pdLost.sizes(unit), pdAll)
		g.Paired = &Paired{
			Runs:        len(diffs),
			MedianMS:    round3(basePaired[0]),
			P90MS:       round3(basePaired[1]),
			H3WonShare:  math.Round(baseWon*1e6) / 1e6,
			H3TieShare:  math.Round(tieShare*1e6) / 1e6,
			H3LostShare: math.Round(lostShare*1e6) / 1e6,
			Histogram:   histogram(diffs),
		}
		for k, name := range orderNames {
			o := PairedOrder{Order: name, Runs: len(byOrder[k])}
			if len(byOrder[k]) > 0 {
				slices.Sort(byOrder[k])
				o.MedianMS = ptr(round3(quantile7(byOrder[k], 0.5)))
			}
			g.Paired.ByOrder = append(g.Paired.ByOrder, o)
		}
	}
	g.Availability = availability(g)
	if g.H2 != nil && g.H3 != nil {
		g.Diff = pointDiffs(g.H2, g.H3)
	}
	if o.Replicates <= 0 || m < 2 {
		return
	}

	// Replicates. A replicate's sizes, per batch order, are summed as its
	// runs are drawn, in lanes of a few words where they fit, else after
	// the draws.
	packed := packSizes(per)
	B := o.Replicates
	h := fnv.New64a()
	h.Write([]byte(g.Group))
	rng := rand.NewPCG(o.Seed, h.Sum64())
	w := make([]int32, m)
	q2, q3, qp := make([]float64, len(qs)), make([]float64, len(qs)), make([]float64, 2)
	reps := func() []float64 { return make([]float64, 0, B) }
	rep2 := make([][]float64, len(qs))
	rep3 := make([][]float64, len(qs))
	repDiff := make([][]float64, len(qs))
	repPct := make([][]float64, len(qs))
	for i := range qs {
		rep2[i], rep3[i], repDiff[i], repPct[i] = reps(), reps(), reps(), reps()
	}
	repMed, repP90, repWon, repAvail := reps(), reps(), reps(), reps()
	for b := 0; b < B; b++ {
		if b%64 == 0 && ctx.Err() != nil {
			return // the caller reports ctx's error
		}
		clear(w)
		var rs repSizes
		if packed != nil {
			var s packedSizes
			for range m {
				r := intN(rng, m)
				w[r]++
				s.add(&packed[r])
			}
			rs = s.unpack()
		} else {
			for range m {
				w[intN(rng, m)]++
			}
			rs = replicateSizes(w, per)
		}
		n2, n3, np, nw, got, want := rs.n2, rs.n3, rs.np, rs.nw, rs.got, rs.want
		ok2 := has2 && x2.quantiles(w, n2, &rs.below2, qs, q2)
		ok3 := has3 && x3.quantiles(w, n3, &rs.below3, qs, q3)
		for i := range qs {
			if ok2 {
				rep2[i] = append(rep2[i], q2[i])
			}
			if ok3 {
				rep3[i] = append(rep3[i], q3[i])
			}
			if ok2 && ok3 {
				repDiff[i] = append(repDiff[i], q3[i]-q2[i])
				if q2[i] != 0 {
					repPct[i] = append(repPct[i], pctChange(q2[i], q3[i]))
				}
			}
		}
		if hasPaired && pd.quantiles(w, np, nil, pairedQs, qp) {
			repMed = append(repMed, qp[0])
			repP90 = append(repP90, qp[1])
			s, _ := balancedShare(nw, np)
			repWon = append(repWon, s)
		}
		if hasAvail && want > 0 {
			repAvail = append(repAvail, float64(got)/float64(want))
		}
	}

	scale := 1.0
	if g.Sampled && g.Runs > m {
		scale = math.Sqrt(float64(m) / float64(g.Runs))
	}
	// shifted maps a replicate interval onto the reported estimate est,
	// given the estimate base on the fetched runs.
	shifted := func(reps []float64, est, base, s float64) (*float64, *float64) {
		lo, hi, ok := interval(reps, B)
		if !ok || math.IsNaN(base) {
			return nil, nil
		}
		return ptr(est + s*(lo-base)), ptr(est + s*(hi-base))
	}
	for i := range qs {
		if g.H2 != nil && has2 && !g.H2.Percentiles[i].Insufficient {
			p := &g.H2.Percentiles[i]
			p.CILowMS, p.CIHighMS = shifted(rep2[i], p.MS, base2[i], scale)
		}
		if g.H3 != nil && has3 && !g.H3.Percentiles[i].Insufficient {
			p := &g.H3.Percentiles[i]
			p.CILowMS, p.CIHighMS = shifted(rep3[i], p.MS, base3[i], scale)
		}
		if len(g.Diff) == len(qs) && has2 && has3 && !g.Diff[i].Insufficient {
			d := &g.Diff[i]
			d.CILowMS, d.CIHighMS = shifted(repDiff[i], d.MS, base3[i]-base2[i], scale)
			if base2[i] != 0 {
				d.CILowPct, d.CIHighPct = shifted(repPct[i], d.Pct, pctChange(base2[i], base3[i]), scale)
			}
		}
	}
	if g.Paired != nil {
		p := g.Paired
		p.MedianCILowMS, p.MedianCIHighMS = shifted(repMed, p.MedianMS, basePaired[0], 1)
		p.P90CILowMS, p.P90CIHighMS = shifted(repP90, p.P90MS, basePaired[1], 1)
		lo, hi := shifted(repWon, baseWon, baseWon, 1)
		p.H3WonCILow, p.H3WonCIHigh = roundShare(lo), roundShare(hi)
	}
	if g.Availability != nil && hasAvail && g.Availability.WantedH3 > 0 {
		a := g.Availability
		lo, hi := shifted(repAvail, a.Share, baseAvail, scale)
		a.CILow, a.CIHigh = clamp01(roundShare(lo)), clamp01(roundShare(hi))
	}
	if g.Availability != nil {
		g.Availability.Share = math.Round(g.Availability.Share*1e6) / 1e6
	}
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

// PairTieMS is the paired difference below which (in absolute value) a
// run is a tie: a browser's timings are rounded, and half a millisecond is
// below what a user or a network could tell apart.
const PairTieMS = 0.5

// histogram bins paired differences into about 20 bins of a "nice" width
// covering the 1st–99th percentile; the outer bins also hold the tails.
func histogram(diffs []float64) Histogram {
	if len(diffs) == 0 {
		return Histogram{Edges: []float64{}, Counts: []int{}}
	}
	s := slices.Clone(diffs)
	slices.Sort(s)
	lo, hi := quantile7(s, 0.01), quantile7(s, 0.99)
	if hi <= lo {
		lo, hi = lo-1, hi+1
	}
	width := niceStep((hi - lo) / 20)
	start := math.Floor(lo/width) * width
	n := int(math.Ceil((hi-start)/width)) + 1
	n = min(max(n, 1), 60)
	edges := make([]float64, n+1)
	for i := range edges {
		edges[i] = round3(start + float64(i)*width)
	}
	counts := make([]int, n)
	for _, d := range s {
		i := int(math.Floor((d - start) / width))
		counts[min(max(i, 0), n-1)]++
	}
	return Histogram{Edges: edges, Counts: counts}
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// availability is the share of requests meant for H3 that used h3, from
// the group's sample counts (nil when nothing was meant for H3); the
// bootstrap adds its interval.
func availability(g *Group) *Availability {
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
