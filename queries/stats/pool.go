package stats

import (
	"math"
	"math/rand/v2"
)

// Stratum is one group's fetched runs and how many runs the group has:
// Runs are all of them, or a uniform sample of Population.
type Stratum struct {
	Runs       []Run
	Population int // the group's runs; at most len(Runs) when all were fetched
}

// Pool is runs drawn from several strata in proportion to their
// populations, so that every visitor's run weighs the same whatever group
// it is in.
type Pool struct {
	Runs       []Run
	Population int     // the strata's runs, all of them
	Fraction   float64 // of each stratum's population drawn
	Drawn      []int   // runs drawn from each stratum, in the strata's order
}

// NewPool draws the same fraction of every stratum's population: the
// largest that each stratum's fetched runs allow and that keeps the pool
// within limit runs (0: no limit). A stratum's runs are drawn uniformly at
// random from its fetched runs (a uniform sample of a uniform sample is
// one), seeded by seed. When every stratum is complete and the total is
// within limit, the pool is every run, in the strata's order.
func NewPool(strata []Stratum, limit int, seed uint64) Pool {
	p := Pool{Fraction: 1, Drawn: make([]int, len(strata))}
	fetched := 0
	for _, s := range strata {
		n := max(s.Population, len(s.Runs))
		p.Population += n
		fetched += len(s.Runs)
		if n > 0 {
			p.Fraction = min(p.Fraction, float64(len(s.Runs))/float64(n))
		}
	}
	if limit > 0 && p.Population > limit {
		p.Fraction = min(p.Fraction, float64(limit)/float64(p.Population))
	}
	p.Runs = make([]Run, 0, min(fetched, int(math.Ceil(p.Fraction*float64(p.Population)))+len(strata)))
	rng := rand.New(rand.NewPCG(seed, streamOf("site pool")))
	for i, s := range strata {
		n := max(s.Population, len(s.Runs))
		k := min(len(s.Runs), int(math.Round(p.Fraction*float64(n))))
		if k == len(s.Runs) {
			p.Runs = append(p.Runs, s.Runs...)
			p.Drawn[i] = k
			continue
		}
		// The first k of a partial Fisher–Yates shuffle of the indices,
		// taken in their original order so that the pool's order does not
		// depend on the draw.
		idx := make([]int, len(s.Runs))
		for j := range idx {
			idx[j] = j
		}
		for j := range k {
			r := j + rng.IntN(len(idx)-j)
			idx[j], idx[r] = idx[r], idx[j]
		}
		take := make([]bool, len(s.Runs))
		for _, j := range idx[:k] {
			take[j] = true
		}
		for j, ok := range take {
			if ok {
				p.Runs = append(p.Runs, s.Runs[j])
			}
		}
		p.Drawn[i] = k
	}
	return p
}
