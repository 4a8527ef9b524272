package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Planted describes runs whose H3 − H2 difference is known exactly at one
// percentile per region: the data for tests that check a report reads
// what was planted ("Asia 150 ms faster at p95, no difference
// elsewhere"). Every run is like-for-like: warm-ups as Generator's, 5
// parallel requests to each origin, all served on their protocol, no
// failure, no bot.
//
// A request's duration is Median·exp(u + σε), with a per-run effect
// u ~ N(0, PlantRunSD²) shared by the run's H2 and H3 requests and
// ε ~ N(0, 1) per request. H2 has σ = PlantSD; H3's σ is solved so that
// its P-th percentile is H2's plus DiffMS. Both protocols keep the same
// median, so a gain planted at the tail is a gain at the tail only.
type Planted struct {
	Seed    uint64
	Start   time.Time     // first run; default 2025-01-01 00:00 UTC
	Span    time.Duration // runs are spread evenly over it; default 48 h
	P       float64       // the percentile of the planted differences, e.g. 95
	Regions []PlantedRegion
}

// PlantedRegion is one region of Planted.
type PlantedRegion struct {
	Continent, Country, Subdivision string
	Runs                            int
	MedianMS                        float64 // both protocols' median request duration
	DiffMS                          float64 // H3 − H2 at the percentile P: negative when HTTP/3 is faster
	// ASN is the runs' autonomous system (0: unknown). BlockUDP makes it
	// a network that blocks QUIC: every request to the H3 origin falls back
	// to h2, at H2's durations, so its runs are fallbacks (availability 0).
	ASN      uint32
	BlockUDP bool
}

// The spreads of Planted's model.
const (
	PlantRunSD = 0.1 // the per-run effect: one visitor, one network
	PlantSD    = 0.5 // a request's own spread, H2's (H3's is solved)
)

// Quantile returns the population quantile q (in (0, 1)) of the region's
// H2 and H3 request durations under a percentile-p plant.
func (r PlantedRegion) Quantile(p, q float64) (h2, h3 float64, err error) {
	s3, err := r.sigmaH3(p)
	if err != nil {
		return 0, 0, err
	}
	z := math.Sqrt2 * math.Erfinv(2*q-1)
	return r.MedianMS * math.Exp(z*math.Hypot(PlantRunSD, PlantSD)), r.MedianMS * math.Exp(z*math.Hypot(PlantRunSD, s3)), nil
}

// sigmaH3 is the per-request spread that puts H3's p-th percentile DiffMS
// from H2's.
func (r PlantedRegion) sigmaH3(p float64) (float64, error) {
	z := math.Sqrt2 * math.Erfinv(2*p/100-1)
	if !(z > 0) || !(r.MedianMS > 0) {
		return 0, fmt.Errorf("planting at p%g with a median of %g ms: want a percentile above 50 and a positive median", p, r.MedianMS)
	}
	q2 := r.MedianMS * math.Exp(z*math.Hypot(PlantRunSD, PlantSD))
	q3 := q2 + r.DiffMS
	total := math.Log(q3/r.MedianMS) / z // H3's whole log spread
	if !(total >= PlantRunSD) {
		return 0, fmt.Errorf("region %s/%s: H3 − H2 of %g ms at p%g leaves H3's p%g at %.1f ms, below what the run effect alone gives (%.1f ms)",
			r.Continent, r.Country, r.DiffMS, p, p, q3, r.MedianMS*math.Exp(z*PlantRunSD))
	}
	return math.Sqrt(total*total - PlantRunSD*PlantRunSD), nil
}

// Rows generates the runs, region after region, each region's spread
// evenly over the span. They come out in time order.
func (c Planted) Rows() ([]Sample, error) {
	if c.Start.IsZero() {
		c.Start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if c.Span == 0 {
		c.Span = 48 * time.Hour
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x91a7))
	type run struct {
		at  time.Time
		reg PlantedRegion
		s3  float64
	}
	var runs []run
	for _, r := range c.Regions {
		s3, err := r.sigmaH3(c.P)
		if err != nil {
			return nil, err
		}
		for i := range r.Runs {
			at := c.Start.Add(time.Duration(float64(c.Span) * (float64(i) + rng.Float64()) / float64(r.Runs))).Truncate(time.Second)
			runs = append(runs, run{at, r, s3})
		}
	}
	// In time order, as ingest sees them; ties keep the regions' order.
	slices.SortStableFunc(runs, func(a, b run) int { return a.at.Compare(b.at) })
	out := make([]Sample, 0, len(runs)*14)
	for _, r := range runs {
		var id uuid.UUID
		for k := range id {
			id[k] = byte(rng.Uint32())
		}
		row := Sample{Time: r.at, Site: "example.com", RunID: id, Continent: r.reg.Continent, Country: r.reg.Country,
			Subdivision: r.reg.Subdivision, ASN: r.reg.ASN, Browser: "Chrome", ECT: "4g"}
		u := PlantRunSD * rng.NormFloat64()
		seq := uint8(0)
		add := func(phase, want, got string, d float64) {
			s := row
			s.Seq, s.Phase, s.Want, s.Got, s.Duration = seq, phase, want, got, float32(math.Round(d*10)/10)
			seq++
			out = append(out, s)
		}
		m, h3, s3 := r.reg.MedianMS, "h3", r.s3
		if r.reg.BlockUDP {
			h3, s3 = "h2", PlantSD
		}
		add("warmup", "h3", "h2", 3*m)
		add("warmup", "h3", h3, 1.5*m)
		add("warmup", "h3", h3, 1.2*m)
		add("warmup", "h2", "h2", 3*m)
		for range 5 {
			add("parallel", "h2", "h2", m*math.Exp(u+PlantSD*rng.NormFloat64()))
		}
		for range 5 {
			add("parallel", "h3", h3, m*math.Exp(u+s3*rng.NormFloat64()))
		}
	}
	return out, nil
}
