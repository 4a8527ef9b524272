package stats

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// weightedQuantiles must equal type-7 quantiles of the replicate written
// out in full, for random data, weights (zeros included), quantiles and
// starting points.
func TestWeightedQuantilesMatchesExpansion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	qs := []float64{0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1}
	for trial := 0; trial < 2000; trial++ {
		m := 1 + rng.IntN(40)
		var xs []obs
		for r := 0; r < m; r++ {
			for k := rng.IntN(6); k > 0; k-- {
				xs = append(xs, obs{v: float64(rng.IntN(50)) + rng.Float64(), run: int32(r)})
			}
		}
		slices.SortFunc(xs, func(a, b obs) int {
			if a.v != b.v {
				return map[bool]int{true: -1, false: 1}[a.v < b.v]
			}
			return int(a.run - b.run)
		})
		w := make([]int32, m)
		for i := 0; i < m; i++ {
			if rng.IntN(3) > 0 {
				w[rng.IntN(m)] += int32(1 + rng.IntN(3))
			}
		}
		var expanded []float64
		for _, x := range xs {
			for k := int32(0); k < w[x.run]; k++ {
				expanded = append(expanded, x.v)
			}
		}
		out := make([]float64, len(qs))
		runs, cnt := runCounts(xs, m)
		// A walk may start at any point whose weight below is known, or
		// at the bottom and the top (nil).
		var starts []walkStart
		if len(xs) > 0 && trial%4 != 0 {
			for range qs {
				s := walkStart{at: rng.IntN(len(xs))}
				for _, x := range xs[:s.at] {
					s.cum += int64(w[x.run])
				}
				starts = append(starts, s)
			}
		}
		ok := weightedQuantiles(xs, replicateSize(runs, cnt, w), w, qs, out, starts)
		if ok != (len(expanded) > 0) {
			t.Fatalf("trial %d: ok %v with %d expanded values", trial, ok, len(expanded))
		}
		if !ok {
			continue
		}
		for k, q := range qs {
			if want := Quantile(expanded, q); out[k] != want {
				t.Fatalf("trial %d: q%g = %v, want %v (xs %v, w %v)", trial, q, out[k], want, xs, w)
			}
		}
	}
}

// identity maps outcome codes that are Kinds already.
func identity(oc uint8) Kind { return Kind(oc) }

// benchRuns makes m runs as the report fetches them: 5 parallel requests
// to each origin, a tenth of the H3 batches fallen back to h2.
func benchRuns(m int) []Run {
	rng := rand.New(rand.NewPCG(3, 4))
	runs := make([]Run, m)
	for i := range runs {
		base := 50 * math.Exp(0.35*rng.NormFloat64())
		var d []float32
		var oc, par []uint8
		fallback := rng.IntN(10) == 0
		for k := 0; k < 10; k++ {
			o := KindH2
			switch {
			case k >= 5 && fallback:
				o = KindFallback
			case k >= 5:
				o = KindH3
			}
			d = append(d, float32(base*math.Exp(0.3*rng.NormFloat64())))
			oc, par = append(oc, uint8(o)), append(par, 1)
		}
		runs[i] = SplitRun(d, oc, par, identity)
		runs[i].H3First = rng.IntN(2) == 1
	}
	slices.SortFunc(runs, CompareRuns)
	return runs
}

// benchConfig is a group thinned to a tenth of its runs, at seed.
func benchConfig(runs, replicates int, seed uint64) Config {
	return Config{Replicates: replicates, Seed: seed, Stream: "EU", Population: 10 * runs}
}

// BenchmarkBootstrap is the bootstrap of one thinned group at the report's
// default cap: 3000 runs, 1000 replicates.
func BenchmarkBootstrap(b *testing.B) {
	runs := benchRuns(3000)
	for b.Loop() {
		if _, err := NewBootstrap(runs).Intervals(context.Background(), benchConfig(len(runs), 1000, 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// intN must draw what math/rand/v2's IntN draws from the same source, so
// that reports keep their values for a given seed.
func TestIntNMatchesRand(t *testing.T) {
	for seed := range uint64(20) {
		a, b := rand.NewPCG(seed, 7), rand.NewPCG(seed, 7)
		r := rand.New(b)
		for i := range 5000 {
			n := 1 + i%3001
			switch i % 7 {
			case 0:
				n = 1 << (i % 62) // powers of two take the mask path
			case 1:
				n = math.MaxInt64 - i // the rejection loop runs now and then
			}
			if got, want := intN(a, n), r.IntN(n); got != want {
				t.Fatalf("seed %d, draw %d: intN(%d) = %d, rand.IntN = %d", seed, i, n, got, want)
			}
		}
	}
}

// A replicate's sizes and weights below the checkpoints, summed in packed
// lanes as its runs are drawn, must equal the sums over its weights, in
// either batch order; packSizes declines runs whose sums could overflow a
// lane.
func TestPackedSizesMatchSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		m := 1 + rng.IntN(3000)
		per := make([]runSizes, m)
		for r := range per {
			per[r] = runSizes{h3First: rng.IntN(2), h2: int32(rng.IntN(14)), h3: int32(rng.IntN(14)),
				paired: int32(rng.IntN(2)), won: int32(rng.IntN(2)), gotH3: int32(rng.IntN(6)), wantH3: int32(rng.IntN(6))}
			for j := range nChecks {
				per[r].below2[j], per[r].below3[j] = int32(rng.IntN(int(per[r].h2)+1)), int32(rng.IntN(int(per[r].h3)+1))
			}
		}
		packed := packSizes(per, packLimit)
		if packed == nil {
			t.Fatalf("trial %d: %d runs of at most 13 observations were not packed", trial, m)
		}
		w := make([]int32, m)
		var s packedSizes
		for range m {
			r := rng.IntN(m)
			w[r]++
			s.add(&packed[r])
		}
		got, want := s.unpack(), replicateSizes(w, per)
		if got != want {
			t.Fatalf("trial %d (%d runs): packed sums %+v, sums over weights %+v", trial, m, got, want)
		}
		var below [nChecks][2]orderSizes // x2's and x3's, per batch order
		for r, p := range per {
			for j := range nChecks {
				below[j][0][p.h3First] += int64(w[r]) * int64(p.below2[j])
				below[j][1][p.h3First] += int64(w[r]) * int64(p.below3[j])
			}
		}
		for j := range nChecks {
			if got.below2[j] != below[j][0] || got.below3[j] != below[j][1] {
				t.Fatalf("trial %d (%d runs): packed weights below checkpoint %d %v %v, sums over weights %v", trial, m, j, got.below2[j], got.below3[j], below[j])
			}
		}
	}
	// 3000 runs of 22 observations could sum to 66 000 in one lane.
	per := make([]runSizes, 3000)
	per[7].h2 = 22
	if packSizes(per, packLimit) != nil {
		t.Error("runs whose replicate could overflow a 16-bit lane were packed")
	}
}

// sortObsByKey orders observations as sorting them by value, then run,
// does; it declines values that are not float32s and leaves them as they
// were.
func TestSortObsByKeyMatchesSortFunc(t *testing.T) {
	byValue := func(a, b obs) int { return cmp.Or(cmp.Compare(a.v, b.v), cmp.Compare(a.run, b.run)) }
	rng := rand.New(rand.NewPCG(9, 10))
	tiny := float64(math.SmallestNonzeroFloat32)
	pool := []float64{0, math.Copysign(0, -1), 1, -1, tiny, -tiny, math.MaxFloat32, -math.MaxFloat32, 37.5, -37.5}
	for trial := range 300 {
		n := rng.IntN(400)
		xs := make([]obs, n)
		for i := range xs {
			v := float64(float32(rng.NormFloat64() * 100))
			if rng.IntN(4) == 0 {
				v = pool[rng.IntN(len(pool))]
			}
			xs[i] = obs{v, int32(rng.IntN(50))}
		}
		want := slices.Clone(xs)
		slices.SortFunc(want, byValue)
		got := slices.Clone(xs)
		if !sortObsByKey(got) {
			t.Fatalf("trial %d: float32 values declined", trial)
		}
		for i := range want {
			if got[i].v != want[i].v || got[i].run != want[i].run {
				t.Fatalf("trial %d: position %d holds %+v, want %+v", trial, i, got[i], want[i])
			}
		}
	}
	xs := []obs{{0.1, 2}, {0.5, 1}} // 0.1 is no float32
	if sortObsByKey(xs) || xs[0] != (obs{0.1, 2}) {
		t.Errorf("a value that is no float32 was sorted by key: %v", xs)
	}
}

// The bootstrap gives the same intervals whether a replicate's sizes are
// summed in packed lanes as its runs are drawn or over its weights after
// (the path of runs too large to pack).
func TestBootstrapPackedOrNot(t *testing.T) {
	runs := benchRuns(800)
	intervals := func(limit int64) string {
		b := NewBootstrap(runs)
		b.packLimit = limit
		iv, err := b.Intervals(context.Background(), benchConfig(len(runs), 300, 4))
		if err != nil || iv == nil {
			t.Fatalf("intervals %v, error %v", iv, err)
		}
		return fmt.Sprintf("%+v", *iv)
	}
	packed := intervals(packLimit)
	if unpacked := intervals(0); unpacked != packed {
		t.Errorf("the bootstrap differs without packing:\n%s\nwith:\n%s", unpacked, packed)
	}
	if !strings.Contains(packed, "OK:true") {
		t.Errorf("no interval to compare: %s", packed)
	}
}

// countBelow counts, per run, the observations below each checkpoint that
// checkAt places, as counting them in xs[:at] does.
func TestCountBelowMatchesPrefixes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	qs := make([]float64, len(Percentiles))
	for i, p := range Percentiles {
		qs[i] = p / 100
	}
	for trial := range 300 {
		m := 1 + rng.IntN(60)
		var o orderedObs
		for r := range m {
			for k := rng.IntN(7); k > 0; k-- {
				o.add(float64(rng.IntN(40)), int32(r), rng.IntN(3) == 0)
			}
		}
		byValue := func(a, b obs) int { return cmp.Or(cmp.Compare(a.v, b.v), cmp.Compare(a.run, b.run)) }
		o.done(m, byValue)
		o.checkAt(qs)
		got := make([][nChecks]int32, m)
		o.countBelow(func(r int32) *[nChecks]int32 { return &got[r] })
		want := make([][nChecks]int32, m)
		for k, xs := range o.xs {
			if len(xs) > 0 && len(o.check[k]) != nChecks {
				t.Fatalf("trial %d: order %d has %d observations and %d checkpoints", trial, k, len(xs), len(o.check[k]))
			}
			for j, at := range o.check[k] {
				if at < 0 || at >= len(xs) {
					t.Fatalf("trial %d: checkpoint %d at %d of %d observations", trial, j, at, len(xs))
				}
				for _, x := range xs[:at] {
					want[x.run][j]++
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: counts below the checkpoints %v, want %v", trial, got, want)
		}
	}
}
