package stats

import (
	"math"
	"testing"
)

// numbered is n runs, run i holding one H2 sample of i ms, so that a
// pooled run says which it was.
func numbered(from, n int) []Run {
	out := make([]Run, n)
	for i := range out {
		out[i] = Run{H2: []float64{float64(from + i)}}
	}
	return out
}

func TestPoolKeepsEveryRunWhenComplete(t *testing.T) {
	p := NewPool([]Stratum{{Runs: numbered(0, 40)}, {Runs: numbered(100, 7), Population: 7}}, 0, 1)
	if len(p.Runs) != 47 || p.Population != 47 || p.Fraction != 1 || p.Drawn[0] != 40 || p.Drawn[1] != 7 {
		t.Fatalf("pool of complete strata: %d runs of %d, fraction %v, drawn %v; want all 47", len(p.Runs), p.Population, p.Fraction, p.Drawn)
	}
	for i, r := range p.Runs {
		want := float64(i)
		if i >= 40 {
			want = float64(100 + i - 40)
		}
		if r.H2[0] != want {
			t.Fatalf("run %d of the pool is %v, want %v: a complete pool keeps the strata's order", i, r.H2[0], want)
		}
	}
}

// A thinned stratum sets the fraction for all: each visitor's run weighs
// the same in the pool.
func TestPoolDrawsInProportion(t *testing.T) {
	p := NewPool([]Stratum{{Runs: numbered(0, 3000), Population: 10000}, {Runs: numbered(20000, 1000), Population: 1000}}, 0, 7)
	if p.Population != 11000 || math.Abs(p.Fraction-0.3) > 1e-12 || p.Drawn[0] != 3000 || p.Drawn[1] != 300 || len(p.Runs) != 3300 {
		t.Fatalf("got %d runs of %d, fraction %v, drawn %v; want 3000 and 300 of 11000 at 0.3", len(p.Runs), p.Population, p.Fraction, p.Drawn)
	}
	second := 0
	for _, r := range p.Runs {
		if r.H2[0] >= 20000 {
			second++
		}
	}
	if second != 300 {
		t.Errorf("%d runs of the second stratum in the pool, want 300", second)
	}
}

func TestPoolWithinLimit(t *testing.T) {
	p := NewPool([]Stratum{{Runs: numbered(0, 100)}, {Runs: numbered(1000, 300)}}, 200, 3)
	if p.Drawn[0] != 50 || p.Drawn[1] != 150 || p.Population != 400 || p.Fraction != 0.5 {
		t.Fatalf("drawn %v of %d at %v, want 50 and 150 of 400 at 0.5", p.Drawn, p.Population, p.Fraction)
	}
}

// The draw is uniform: over many seeds every run of a stratum is drawn
// about as often, and one seed always draws the same runs.
func TestPoolDrawIsUniformAndSeeded(t *testing.T) {
	const n, k, seeds = 20, 5, 4000
	hits := make([]int, n)
	for seed := range uint64(seeds) {
		p := NewPool([]Stratum{{Runs: numbered(0, n), Population: 4 * n}}, k, seed)
		if len(p.Runs) != k {
			t.Fatalf("seed %d drew %d runs, want %d", seed, len(p.Runs), k)
		}
		last := -1.0
		for _, r := range p.Runs {
			if r.H2[0] <= last {
				t.Fatalf("seed %d: drawn runs out of the stratum's order", seed)
			}
			last = r.H2[0]
			hits[int(r.H2[0])]++
		}
	}
	// Each run is drawn with probability k/n: a binomial of mean 1000 and
	// sd 27; 6 sd either side.
	mean, sd := float64(seeds*k)/n, math.Sqrt(float64(seeds)*k/n*(1-float64(k)/n))
	for i, h := range hits {
		if math.Abs(float64(h)-mean) > 6*sd {
			t.Errorf("run %d drawn %d times in %d seeds, want %.0f ± %.0f", i, h, seeds, mean, 6*sd)
		}
	}
	a := NewPool([]Stratum{{Runs: numbered(0, n), Population: 4 * n}}, k, 99)
	b := NewPool([]Stratum{{Runs: numbered(0, n), Population: 4 * n}}, k, 99)
	for i := range a.Runs {
		if a.Runs[i].H2[0] != b.Runs[i].H2[0] {
			t.Fatal("one seed drew two different pools")
		}
	}
}
