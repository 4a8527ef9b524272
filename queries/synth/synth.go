// Package synth generates synthetic h3rum runs with a known HTTP/3
// advantage at the tail, for the report tests and the benchmark.
package synth

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
)

// Region is one place visitors come from.
type Region struct {
	Continent, Country, Subdivision string // "" = unknown
	Weight                          float64
	RTT                             float64 // median base duration, ms
	Fallback                        float64 // share of runs whose H3 batch fell back to h2
}

// DefaultRegions has several continents, an unknown region and a small
// group (OC) below the default minimum of 30 runs at a few thousand runs.
var DefaultRegions = []Region{
	{"EU", "DE", "DE-BE", 0.30, 30, 0.05},
	{"EU", "FR", "FR-IDF", 0.10, 35, 0.05},
	{"NA", "US", "US-CA", 0.25, 50, 0.08},
	{"AS", "JP", "JP-13", 0.12, 120, 0.15},
	{"AS", "IN", "IN-MH", 0.10, 150, 0.25},
	{"", "", "", 0.125, 80, 0.10},
	{"OC", "AU", "AU-NSW", 0.005, 90, 0.10},
}

// Config shapes the generated runs. Zero fields take the defaults noted.
type Config struct {
	Seed     uint64
	Start    time.Time     // first run; default 2025-01-01 00:00 UTC
	Span     time.Duration // runs are spread evenly over it; default 48 h
	Runs     int           // total runs
	Parallel int           // requests per parallel batch; default 5
	Regions  []Region      // default DefaultRegions
	Sites    []string      // default example.com (90 %) and other.org
	// OnlyH2 generates runs without an H3 batch (a single-protocol data set).
	OnlyH2 bool
}

// Sample is one generated row (the columns the report reads).
type Sample struct {
	Time        time.Time
	Site        string
	RunID       uuid.UUID
	Seq         uint8
	Phase       string // warmup, parallel
	Want, Got   string // h2, h3, unknown, …
	Duration    float32
	Error       string
	Continent   string
	Country     string
	Subdivision string
	ASN         uint32
	Browser     string
	ECT         string
	Bot         uint8
	Collector   string // the collector whose probe served it ("" none), see collectorOf
}

// Generator emits runs in time order.
type Generator struct {
	cfg  Config
	rng  *rand.Rand
	next int
	cum  []float64
}

// New returns a generator for cfg.
func New(cfg Config) *Generator {
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if cfg.Span == 0 {
		cfg.Span = 48 * time.Hour
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 5
	}
	if cfg.Regions == nil {
		cfg.Regions = DefaultRegions
	}
	if cfg.Sites == nil {
		cfg.Sites = []string{"example.com", "example.com", "example.com", "example.com", "example.com",
			"example.com", "example.com", "example.com", "example.com", "other.org"}
	}
	g := &Generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed))}
	total := 0.0
	for _, r := range cfg.Regions {
		total += r.Weight
		g.cum = append(g.cum, total)
	}
	for i := range g.cum {
		g.cum[i] /= total
	}
	return g
}

// Done reports whether every run has been emitted.
func (g *Generator) Done() bool { return g.next >= g.cfg.Runs }

// SamplesPerRun is the most rows one run produces.
func (g *Generator) SamplesPerRun() int { return 4 + 2*g.cfg.Parallel }

var browsers = []string{"Chrome", "Chrome", "Chrome", "Safari", "Firefox", "Edge", ""}

// ects includes free text, as rows stored before the decoder kept c.et to
// its vocabulary may hold: the report groups it as unknown.
var ects = []string{"4g", "4g", "4g", "3g", "", "=HYPERLINK(1)"}

// Run appends the next run's samples to dst.
func (g *Generator) Run(dst []Sample) []Sample {
	if g.Done() {
		return dst
	}
	cfg, rng := &g.cfg, g.rng
	i := g.next
	g.next++
	t := cfg.Start.Add(time.Duration(float64(cfg.Span) * float64(i) / float64(cfg.Runs))).Truncate(time.Second)
	u := rng.Float64()
	reg := cfg.Regions[len(cfg.Regions)-1]
	for k, c := range g.cum {
		if u < c {
			reg = cfg.Regions[k]
			break
		}
	}
	var id uuid.UUID
	for k := range id {
		id[k] = byte(rng.Uint32())
	}
	bot := uint8(0)
	if rng.Float64() < 0.03 {
		bot = 1
	}
	base := reg.RTT * math.Exp(0.35*rng.NormFloat64())
	row := Sample{
		Time: t, Site: cfg.Sites[rng.IntN(len(cfg.Sites))], RunID: id,
		Continent: reg.Continent, Country: reg.Country, Subdivision: reg.Subdivision,
		ASN: uint32([]int{0, 3320, 7922, 2516}[rng.IntN(4)]), Browser: browsers[rng.IntN(len(browsers))],
		ECT: ects[rng.IntN(len(ects))], Bot: bot,
	}
	row.Collector = collectorOf[row.ASN]
	seq := uint8(0)
	add := func(phase, want, got string, d float64) {
		s := row
		s.Seq, s.Phase, s.Want, s.Got = seq, phase, want, got
		seq++
		if bot == 1 {
			d = 2 + rng.Float64() // bots on cloud VMs: uniformly fast
		}
		if rng.Float64() < 0.01 {
			s.Error, s.Got, d = []string{"timeout", "network"}[rng.IntN(2)], "unknown", 0
		}
		s.Duration = float32(math.Round(d*10) / 10)
		dst = append(dst, s)
	}
	// Warm-up: three requests to the H3 origin (the first over TCP), one to H2.
	add("warmup", "h3", "h2", base*3)
	add("warmup", "h3", "h3", base*1.5)
	add("warmup", "h3", "h3", base*1.2)
	add("warmup", "h2", "h2", base*3)
	fallback := rng.Float64() < reg.Fallback
	for k := 0; k < cfg.Parallel; k++ {
		got := "h2"
		if rng.Float64() < 0.01 {
			got = "unknown"
		}
		add("parallel", "h2", got, requestH2(rng, base))
	}
	if !cfg.OnlyH2 {
		for k := 0; k < cfg.Parallel; k++ {
			if fallback {
				add("parallel", "h3", "h2", requestH2(rng, base))
			} else {
				add("parallel", "h3", "h3", requestH3(rng, base))
			}
		}
	}
	return dst
}

// requestH2 is a warm HTTP/2 request: about one RTT, with a 12 % chance of
// a head-of-line-blocking stall averaging two RTTs.
func requestH2(rng *rand.Rand, base float64) float64 {
	d := base * (1 + 0.1*rng.Float64())
	if rng.Float64() < 0.12 {
		d += rng.ExpFloat64() * 2 * base
	}
	return d
}

// requestH3 is a warm HTTP/3 request: 3 % faster at the median, and stalls
// half as often and half as long.
func requestH3(rng *rand.Rand, base float64) float64 {
	d := 0.97 * base * (1 + 0.1*rng.Float64())
	if rng.Float64() < 0.06 {
		d += rng.ExpFloat64() * base
	}
	return d
}

// All generates every run of cfg.
func All(cfg Config) []Sample {
	g := New(cfg)
	var out []Sample
	for !g.Done() {
		out = g.Run(out)
	}
	return out
}

// Insert writes rows in one batch through the samples table's one row
// definition (store.Batch), each run's rows becoming one store.Run. Callers
// keep batches time-ordered and bounded: current servers refuse inserts
// touching > 100 partitions.
func Insert(ctx context.Context, conn driver.Conn, rows []Sample) error {
	var b store.Batch
	for len(rows) > 0 {
		n := 1
		for n < len(rows) && rows[n].RunID == rows[0].RunID {
			n++
		}
		run := toRun(rows[:n])
		b.Add(&run)
		rows = rows[n:]
	}
	if err := b.Insert(ctx, conn); err != nil {
		return fmt.Errorf("inserting synthetic samples: %w", err)
	}
	return nil
}

// toRun makes the store.Run that rows, the samples of one run, come from.
func toRun(rows []Sample) store.Run {
	r := rows[0]
	rep := &beacon.Report{RunID: r.RunID, Site: r.Site, BeaconVersion: "1.0.0", Client: beacon.Client{EffectiveType: r.ECT},
		Params:  beacon.Params{Order: Order(r.RunID), Trigger: "load"},
		Samples: make([]beacon.Sample, len(rows))}
	for i, s := range rows {
		// A warm-up opens its origin's connection (its set-up, half its
		// time, is what the handshakes section reads); every later
		// request reuses it.
		rep.Samples[i] = beacon.Sample{Seq: int(s.Seq), Phase: beacon.Phase(s.Phase), Want: beacon.Proto(s.Want),
			Got: beacon.Proto(s.Got), Duration: float64(s.Duration), Error: s.Error, Reused: true}
		if s.Phase == string(beacon.PhaseWarmup) {
			rep.Samples[i].Reused, rep.Samples[i].Connect = false, float64(s.Duration)/2
		}
		if s.Collector != "" {
			// The connection id carries the collector; without
			// Server-Timing present it does not enter the cold rule.
			rep.Samples[i].Server.ConnID = s.Collector + ".0-" + s.Want
		}
		switch {
		case s.Phase == string(beacon.PhaseWarmup) && s.Want == string(beacon.ProtoH3):
			rep.Params.Warmup++
		case s.Phase == string(beacon.PhaseParallel) && s.Want == string(beacon.ProtoH2):
			rep.Params.Parallel++
		}
	}
	return store.Run{Report: rep, Received: r.Time, Enrichment: store.Enrichment{
		Geo:     store.Geo{Continent: r.Continent, Country: r.Country, Subdivision: r.Subdivision, ASN: r.ASN},
		Browser: r.Browser, Bot: r.Bot == 1,
	}}
}

// collectorOf names the collector a synthetic run's network reached, by
// ASN (no draw of its own, so the rest of the data does not change);
// ASN 0 reached one without --collector-id.
var collectorOf = map[uint32]string{3320: "fra-1", 7922: "iad-1", 2516: "nrt-1"}

// Order is the batch order of the run with id: as the script, it starts
// either batch first at random (here: by a bit of the id).
func Order(id uuid.UUID) string {
	if id[15]&1 == 0 {
		return "h2first"
	}
	return "h3first"
}

// Exclusions returns each run's exclusions as ingest computes them
// (store.ExclusionsOf) for rows, whole runs in the order All emits them.
func Exclusions(rows []Sample) map[uuid.UUID]store.Exclusions {
	out := map[uuid.UUID]store.Exclusions{}
	for len(rows) > 0 {
		n := 1
		for n < len(rows) && rows[n].RunID == rows[0].RunID {
			n++
		}
		run := toRun(rows[:n])
		out[rows[0].RunID] = store.ExclusionsOf(&run)
		rows = rows[n:]
	}
	return out
}
