package stats

import (
	"cmp"
	"context"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// streamOf is the random stream a name seeds: a group's draws do not
// depend on which other groups there are.
func streamOf(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// intN is rand.New(src).IntN(n) for n > 0 (math/rand/v2's unbiased
// multiply-and-shift; its 32-bit path yields the same values), without
// the call through the Source interface: the draws of every replicate are
// a large part of the bootstrap's time.
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
	h3First             int            // 1 for the H3 batch first (H3First), else 0
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
// selected by arithmetic rather than by index or branch, which is faster
// than adding each draw's sizes into per-order arrays as it is drawn
// (BenchmarkBootstrap).
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
// is a pass over every run (BenchmarkBootstrap).
type packedSizes [3 + nChecks]uint64

const laneBits = 16

// packLimit bounds a lane's sum.
const packLimit = 1 << laneBits

// add adds p's words one by one: as a loop it is slower, the array being
// kept in memory (BenchmarkBootstrap). A word fewer does not compile; one
// more is missed, and TestPackedSizesMatchSums fails.
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
// sum could reach limit (packLimit, or lower for a test of the other
// path): len(per) draws of the largest size (a count below a checkpoint is
// at most its series' size).
func packSizes(per []runSizes, limit int64) []packedSizes {
	var most int64
	for _, p := range per {
		most = max(most, int64(p.h2), int64(p.h3), int64(p.paired), int64(p.won), int64(p.gotH3), int64(p.wantH3))
	}
	if most*int64(len(per)) >= limit {
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
	return Quantile(reps, 0.025), Quantile(reps, 0.975), true
}

// Bootstrap is the cluster (run) bootstrap of a group's runs. A replicate
// draws len(runs) runs with replacement and recomputes every statistic
// over all samples of the drawn runs, so the correlation between requests
// of one run (they share a connection) and between a run's H2 and H3
// batches is kept. Every statistic weighs both batch orders equally.
type Bootstrap struct {
	m                   int // runs
	x2, x3, pd          orderedObs
	pdWon               orderedObs // the paired differences won
	per                 []runSizes
	qs, pairedQs        []float64
	base2, base3        []float64 // at qs, every run weighing one
	has2, has3          bool
	basePaired          []float64 // at pairedQs
	baseWon             float64
	hasPaired, hasAvail bool
	baseAvail           float64
	paired              *Paired
	packLimit           int64 // packLimit; a test lowers it to take the other path
}

// Paired is the within-run comparison: for each run whose parallel H3
// batch used h3 throughout and which has both batches (PairedEligible),
// the median of its H3 batch minus the median of its H2 batch. These
// figures are of the fetched runs themselves, and so are their intervals:
// they are not scaled to a population.
type Paired struct {
	Diffs          []float64 // the runs' differences, in run order
	Median, P90    float64   // order-balanced, over runs
	Won, Tie, Lost float64   // order-balanced shares of runs: H3 faster by at least PairTieMS, within it, slower by at least it
	// ByOrder are the runs of each batch order (H2First, H3First) and
	// their median difference (NaN without runs): a gap between the two is
	// an order effect.
	ByOrder [2]struct {
		Runs   int
		Median float64
	}
}

// NewBootstrap prepares runs for the bootstrap and computes every
// statistic on them, each run weighing one: the replicates' centre. Its
// results depend on the order of runs (CompareRuns makes it canonical).
func NewBootstrap(runs []Run) *Bootstrap {
	m := len(runs)
	b := &Bootstrap{m: m, per: make([]runSizes, m), packLimit: packLimit}
	o := b.observe(runs)
	b.estimate(o)
	return b
}

// observed is what observe collects beyond the Bootstrap's own series:
// the paired differences tied and lost, all of them for the histogram,
// and those of h2first and h3first runs.
type observed struct {
	pdTie, pdLost orderedObs
	diffs         []float64
	byOrder       [2][]float64
}

// observe adds every run's samples and paired difference to the series,
// sorted, with each run's sizes.
func (b *Bootstrap) observe(runs []Run) *observed {
	m := b.m
	ob := &observed{}
	won := func(d float64) bool { return d <= -PairTieMS }
	tie := func(d float64) bool { return math.Abs(d) < PairTieMS }
	lost := func(d float64) bool { return d >= PairTieMS }
	x2, x3, pd, pdWon := &b.x2, &b.x3, &b.pd, &b.pdWon
	pdTie, pdLost := &ob.pdTie, &ob.pdLost
	per := b.per
	// Each series' observations, counted first so that each is allocated
	// once.
	var n2, n3, np [2]int
	for r := range runs {
		k := orderOf(runs[r].H3First)
		n2[k] += len(runs[r].H2)
		n3[k] += len(runs[r].H3)
		if runs[r].PairedEligible() {
			np[k]++
		}
	}
	for k := range 2 {
		x2.xs[k] = make([]obs, 0, n2[k])
		x3.xs[k] = make([]obs, 0, n3[k])
		pd.xs[k] = make([]obs, 0, np[k])
	}
	for r := range runs {
		run := &runs[r]
		p := &per[r]
		p.h2, p.h3, p.gotH3, p.wantH3 = int32(len(run.H2)), int32(len(run.H3)), int32(len(run.H3)), int32(len(run.H3)+len(run.Fallback))
		p.h3First = orderOf(run.H3First)
		for _, v := range run.H2 {
			x2.add(v, int32(r), run.H3First)
		}
		for _, v := range run.H3 {
			x3.add(v, int32(r), run.H3First)
		}
		if run.PairedEligible() {
			d := Quantile(run.H3Par, 0.5) - Quantile(run.H2Par, 0.5)
			pd.add(d, int32(r), run.H3First)
			p.paired = 1
			if won(d) {
				p.won = 1
			}
			for _, c := range []struct {
				sub  *orderedObs
				pred func(float64) bool
			}{{pdWon, won}, {pdTie, tie}, {pdLost, lost}} {
				if c.pred(d) {
					c.sub.add(d, int32(r), run.H3First)
				}
			}
			ob.diffs = append(ob.diffs, d)
			k := orderOf(run.H3First)
			ob.byOrder[k] = append(ob.byOrder[k], d)
		}
	}
	byValue := func(a, b obs) int { return cmp.Or(cmp.Compare(a.v, b.v), cmp.Compare(a.run, b.run)) }
	x2.done(m, byValue)
	x3.done(m, byValue)
	for _, o := range []*orderedObs{pd, pdWon, pdTie, pdLost} {
		o.done(m, byValue)
	}
	return ob
}

// estimate computes the statistics on every fetched run once: the base
// the replicates' intervals are shifted around, and the paired view.
func (b *Bootstrap) estimate(ob *observed) {
	m, per := b.m, b.per
	x2, x3, pd, pdWon := &b.x2, &b.x3, &b.pd, &b.pdWon
	b.qs = make([]float64, len(Percentiles))
	for i, p := range Percentiles {
		b.qs[i] = p / 100
	}
	b.pairedQs = []float64{0.5, 0.9}
	// A replicate's walk to each percentile starts at a checkpoint near it.
	x2.checkAt(b.qs)
	x3.checkAt(b.qs)
	x2.countBelow(func(r int32) *[nChecks]int32 { return &per[r].below2 })
	x3.countBelow(func(r int32) *[nChecks]int32 { return &per[r].below3 })
	unit := make([]int32, m)
	for i := range unit {
		unit[i] = 1
	}
	b.base2, b.base3 = make([]float64, len(b.qs)), make([]float64, len(b.qs))
	b.has2 = x2.quantiles(unit, x2.sizes(unit), nil, b.qs, b.base2)
	b.has3 = x3.quantiles(unit, x3.sizes(unit), nil, b.qs, b.base3)
	b.basePaired = make([]float64, 2)
	pdAll := pd.sizes(unit)
	b.hasPaired = pd.quantiles(unit, pdAll, nil, b.pairedQs, b.basePaired)
	b.baseWon, _ = balancedShare(pdWon.sizes(unit), pdAll)
	var gotAll, wantAll int64
	for _, p := range per {
		gotAll, wantAll = gotAll+int64(p.gotH3), wantAll+int64(p.wantH3)
	}
	b.hasAvail = wantAll > 0
	b.baseAvail = float64(gotAll) / float64(max(wantAll, 1))

	if b.hasPaired {
		tieShare, _ := balancedShare(ob.pdTie.sizes(unit), pdAll)
		lostShare, _ := balancedShare(ob.pdLost.sizes(unit), pdAll)
		b.paired = &Paired{Diffs: ob.diffs, Median: b.basePaired[0], P90: b.basePaired[1], Won: b.baseWon, Tie: tieShare, Lost: lostShare}
		for k := range ob.byOrder {
			b.paired.ByOrder[k].Runs = len(ob.byOrder[k])
			slices.Sort(ob.byOrder[k])
			b.paired.ByOrder[k].Median = Quantile(ob.byOrder[k], 0.5)
		}
	}
}

// Paired is the paired view of the runs, nil when no run is eligible.
func (b *Bootstrap) Paired() *Paired { return b.paired }

// Config says how many replicates the bootstrap draws, from which random
// stream, and what population the runs stand for.
type Config struct {
	// Replicates is how many replicates to draw; with none, or with fewer
	// than two runs, there are no intervals.
	Replicates int
	// Seed and Stream (the group's name) seed the draws: a group's
	// intervals are the same for the same seed, whatever other groups
	// there are.
	Seed   uint64
	Stream string
	// Population is how many runs the runs are a uniform sample of; 0,
	// or no more than the runs, when they are all of them. From a sample of
	// m out of n, deviations are scaled by √(m/n) (m-out-of-n bootstrap)
	// to estimate the full data's intervals.
	Population int
}

// Interval is a bootstrap interval: the 2.5 and 97.5 % points of the
// replicates of a statistic whose value on the fetched runs is Base.
type Interval struct {
	Base, Lo, Hi float64
	Scale        float64 // what deviations from Base are multiplied by (Config.Population)
	// OK is false when fewer than half the replicates produced a value,
	// or Base is not a number.
	OK bool
}

// Around maps the interval onto est, the reported estimate of the same
// statistic (which may come from elsewhere, such as ClickHouse's
// t-digest): est plus the interval's deviations from Base, scaled. ok is
// false without an interval.
func (iv Interval) Around(est float64) (lo, hi float64, ok bool) {
	if !iv.OK {
		return 0, 0, false
	}
	return est + iv.Scale*(iv.Lo-iv.Base), est + iv.Scale*(iv.Hi-iv.Base), true
}

// Intervals are the bootstrap's intervals of a group's statistics.
type Intervals struct {
	H2, H3  []Interval // at Percentiles
	Diff    []Interval // of H3 − H2 at Percentiles, in ms
	DiffPct []Interval // and in percent of H2 (none where H2's is 0)
	// The paired view's median and 90th percentile, and the share of runs
	// H3 won (Paired).
	PairedMedian, PairedP90, PairedWon Interval
	// Availability is the share of requests meant for H3 that used h3.
	Availability Interval
}

// Intervals draws c.Replicates replicates and returns every statistic's
// interval; nil without replicates. It stops with ctx's error when ctx
// ends.
func (b *Bootstrap) Intervals(ctx context.Context, c Config) (*Intervals, error) {
	if c.Replicates <= 0 || b.m < 2 {
		return nil, nil
	}
	r, err := b.replicate(ctx, c)
	if err != nil {
		return nil, err
	}
	return b.intervals(r, c), nil
}

// replicateSet is each statistic's value in every bootstrap replicate
// where it exists.
type replicateSet struct {
	h2, h3, diff, pct    [][]float64 // by percentile
	med, p90, won, avail []float64
}

// replicate draws c.Replicates resamples of the runs (with replacement,
// from c's seed and stream) and computes every statistic on each.
func (b *Bootstrap) replicate(ctx context.Context, c Config) (*replicateSet, error) {
	m, qs := b.m, b.qs
	x2, x3, pd, per := &b.x2, &b.x3, &b.pd, b.per
	// A replicate's sizes, per batch order, are summed as its runs are
	// drawn, in lanes of a few words where they fit, else after the
	// draws.
	packed := packSizes(per, b.packLimit)
	B := c.Replicates
	rng := rand.NewPCG(c.Seed, streamOf(c.Stream))
	w := make([]int32, m)
	q2, q3, qp := make([]float64, len(qs)), make([]float64, len(qs)), make([]float64, 2)
	reps := func() []float64 { return make([]float64, 0, B) }
	r := &replicateSet{h2: make([][]float64, len(qs)), h3: make([][]float64, len(qs)), diff: make([][]float64, len(qs)), pct: make([][]float64, len(qs))}
	for i := range qs {
		r.h2[i], r.h3[i], r.diff[i], r.pct[i] = reps(), reps(), reps(), reps()
	}
	r.med, r.p90, r.won, r.avail = reps(), reps(), reps(), reps()
	for rep := 0; rep < B; rep++ {
		if rep%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rs := draw(rng, w, packed, per)
		n2, n3, np, nw, got, want := rs.n2, rs.n3, rs.np, rs.nw, rs.got, rs.want
		ok2 := b.has2 && x2.quantiles(w, n2, &rs.below2, qs, q2)
		ok3 := b.has3 && x3.quantiles(w, n3, &rs.below3, qs, q3)
		for i := range qs {
			if ok2 {
				r.h2[i] = append(r.h2[i], q2[i])
			}
			if ok3 {
				r.h3[i] = append(r.h3[i], q3[i])
			}
			if ok2 && ok3 {
				r.diff[i] = append(r.diff[i], q3[i]-q2[i])
				if q2[i] != 0 {
					r.pct[i] = append(r.pct[i], PctChange(q2[i], q3[i]))
				}
			}
		}
		if b.hasPaired && pd.quantiles(w, np, nil, b.pairedQs, qp) {
			r.med = append(r.med, qp[0])
			r.p90 = append(r.p90, qp[1])
			s, _ := balancedShare(nw, np)
			r.won = append(r.won, s)
		}
		if b.hasAvail && want > 0 {
			r.avail = append(r.avail, float64(got)/float64(want))
		}
	}
	return r, nil
}

// draw sets w to the times each of the m runs is drawn in one resample
// and returns the replicate's sizes: summed from packed as the runs are
// drawn where the sizes fit its lanes, else from per after the draws.
func draw(rng *rand.PCG, w []int32, packed []packedSizes, per []runSizes) repSizes {
	m := len(w)
	clear(w)
	if packed != nil {
		var s packedSizes
		for range m {
			r := intN(rng, m)
			w[r]++
			s.add(&packed[r])
		}
		return s.unpack()
	}
	for range m {
		w[intN(rng, m)]++
	}
	return replicateSizes(w, per)
}

// intervals turns the replicates into each statistic's interval around
// the estimate on all fetched runs, scaled to the population's (m out of
// n) where the runs are a sample of it.
func (b *Bootstrap) intervals(r *replicateSet, c Config) *Intervals {
	m, qs, B := b.m, b.qs, c.Replicates
	scale := 1.0
	if c.Population > m {
		scale = math.Sqrt(float64(m) / float64(c.Population))
	}
	of := func(reps []float64, base, scale float64) Interval {
		lo, hi, ok := interval(reps, B)
		return Interval{Base: base, Lo: lo, Hi: hi, Scale: scale, OK: ok && !math.IsNaN(base)}
	}
	iv := &Intervals{
		H2: make([]Interval, len(qs)), H3: make([]Interval, len(qs)),
		Diff: make([]Interval, len(qs)), DiffPct: make([]Interval, len(qs)),
	}
	for i := range qs {
		if b.has2 {
			iv.H2[i] = of(r.h2[i], b.base2[i], scale)
		}
		if b.has3 {
			iv.H3[i] = of(r.h3[i], b.base3[i], scale)
		}
		if b.has2 && b.has3 {
			iv.Diff[i] = of(r.diff[i], b.base3[i]-b.base2[i], scale)
			if b.base2[i] != 0 {
				iv.DiffPct[i] = of(r.pct[i], PctChange(b.base2[i], b.base3[i]), scale)
			}
		}
	}
	if b.hasPaired {
		iv.PairedMedian = of(r.med, b.basePaired[0], 1)
		iv.PairedP90 = of(r.p90, b.basePaired[1], 1)
		iv.PairedWon = of(r.won, b.baseWon, 1)
	}
	if b.hasAvail {
		iv.Availability = of(r.avail, b.baseAvail, scale)
	}
	return iv
}

// PctChange is H3's change from H2 in percent of H2; 0 when H2 is 0.
func PctChange(h2, h3 float64) float64 {
	if h2 == 0 {
		return 0
	}
	return 100 * (h3 - h2) / h2
}
