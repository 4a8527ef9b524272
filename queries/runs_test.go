package queries

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"

	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
	"github.com/h3rum/h3rum/queries/stats"
)

// TestSampleBoundIsUniform: the runs whose id's last eight bytes are at
// most a group's bound are cap/runs of its runs, whatever the cap.
func TestSampleBoundIsUniform(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = rng.Uint64()
	}
	for _, c := range []struct{ runs, cap int }{{100, 3000}, {3000, 3000}, {3001, 3000}, {10000, 3000}, {1000000, 3000}, {4, 1}} {
		b := sampleBound(c.runs, c.cap)
		want := min(1, float64(c.cap)/float64(c.runs))
		kept := 0
		for _, id := range ids {
			if id <= b {
				kept++
			}
		}
		// Binomial: 5 standard deviations of n draws.
		if got, sd := float64(kept)/n, math.Sqrt(want*(1-want)/n); math.Abs(got-want) > 5*sd+1e-9 {
			t.Errorf("%d runs, cap %d: kept %.5f of the ids, want %.5f", c.runs, c.cap, got, want)
		}
	}
	if got := boundID(0x0102030405060708); got != "ffffffff-ffff-ffff-0102-030405060708" {
		t.Errorf("boundID = %s", got)
	}
}

// TestRunSampleReadsBelowTheBound: the per-run fetch keeps exactly the
// runs at most the group's bound, and ClickHouse reads only the granules
// of runs_by_id below each continent's bound, so the rows it reads follow
// the cap, not the group's size, nor the window's hours (a range a day, not
// an hour), nor the largest bound: a small continent kept whole costs its
// own runs. By country, the granules below the largest bound.
func TestRunSampleReadsBelowTheBound(t *testing.T) {
	conn := newDB(t)
	ctx := context.Background()
	day := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	const runs, capRuns = 100000, 3000
	batch, err := conn.PrepareBatch(ctx, `INSERT INTO runs_by_id (time, site, run_id, continent, country, param_parallel, param_warmup,
		beacon_major, param_order, durations, outcomes, wants, errors)`)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	halves := map[string][]uint64{} // each group's ids' last eight bytes
	for i := range runs {
		var id uuid.UUID
		binary.BigEndian.PutUint64(id[:8], rng.Uint64())
		binary.BigEndian.PutUint64(id[8:], rng.Uint64())
		continent := "EU"
		if i%50 == 0 {
			continent = "OC" // 2 000 runs, every one kept
		}
		halves[continent] = append(halves[continent], binary.BigEndian.Uint64(id[8:]))
		if err := batch.Append(day.Add(time.Duration(i)*24*time.Hour/runs), "skip.example", id, continent, continent,
			uint8(5), uint8(1), uint16(1), "h2first", []float32{10, 20}, []string{"h2", "h3"}, []string{"h2", "h3"}, []string{"", ""}); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}
	o := model.Options{Since: day, Until: day.Add(24 * time.Hour), Site: "skip.example", By: "continent", Design: model.Design{All: true}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	w := query.NewWindow(o.Since, o.Until, day.Add(25*time.Hour))
	for _, c := range []struct {
		by     string
		groups []string
		read   float64 // most of the table's rows read
	}{
		// EU alone: its bound, 3 000 of 98 000 runs, is the first 3 % of
		// its rows.
		{"continent", []string{"EU"}, 0.06},
		// With OC, which keeps every run: its 2 000 rows more.
		{"continent", []string{"EU", "OC"}, 0.08},
		// By country (each continent's country here): the largest bound,
		// OC's, is every run.
		{"country", []string{"EU", "OC"}, 1},
	} {
		o.By = c.by
		var bounds []uint64
		for _, g := range c.groups {
			bounds = append(bounds, sampleBound(len(halves[g]), capRuns))
		}
		st, err := perRunQuery(&o, w, c.groups, bounds)
		if got := strings.Contains(st.SQL, "sample_bound_0"); got != (c.by == "continent") {
			t.Errorf("by %s: a range of the key per continent: %v", c.by, got)
		}
		if err != nil {
			t.Fatal(err)
		}
		var read atomic.Uint64
		qctx := clickhouse.Context(ctx, clickhouse.WithProgress(func(p *clickhouse.Progress) { read.Add(p.Rows) }))
		byGroup, err := fetchRuns(qctx, conn, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range c.groups {
			want := 0
			for _, h := range halves[g] {
				if h <= bounds[i] {
					want++
				}
			}
			if got := len(byGroup[g]); got != want {
				t.Errorf("groups %v: %s: fetched %d runs, %d are at most its bound", c.groups, g, got, want)
			}
			if lo, hi := min(len(halves[g]), capRuns)*8/10, min(len(halves[g]), capRuns)*12/10; want < lo || want > hi {
				t.Errorf("groups %v: %s: %d runs at most its bound, want about %d", c.groups, g, want, min(len(halves[g]), capRuns))
			}
		}
		t.Logf("groups %v: read %d of %d rows", c.groups, read.Load(), runs)
		if got := float64(read.Load()) / runs; got > c.read || got == 0 {
			t.Errorf("groups %v: read %.0f %% of the runs table, want at most %.0f %% (and not nothing)", c.groups, 100*got, 100*c.read)
		}
	}
}

// TestEdgeReadsItsMinutes: a rollup file reads the minutes at its window's
// edge before the five-minute twins' first slot from the runs table,
// sorted by time, so it reads about those minutes' runs: 2.5 of 120 here
// (the runs are in the runs table alone, so the twins' 5 minutes of the
// edge add nothing), where the runs table sorted by hour and continent
// read the edge's whole hour.
func TestEdgeReadsItsMinutes(t *testing.T) {
	conn := newDB(t)
	ctx := context.Background()
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	const runs = 60000
	batch, err := conn.PrepareBatch(ctx, `INSERT INTO runs (time, site, run_id, continent, country, param_parallel, param_warmup,
		beacon_major, param_order, durations, outcomes, wants, errors)`)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range runs {
		var id uuid.UUID
		binary.BigEndian.PutUint64(id[:8], rng.Uint64())
		binary.BigEndian.PutUint64(id[8:], rng.Uint64())
		continent := []string{"EU", "NA", "AS"}[i%3]
		if err := batch.Append(start.Add(time.Duration(i)*2*time.Hour/runs), "edge.example", id, continent, continent,
			uint8(5), uint8(1), uint16(1), "h2first", []float32{10, 20}, []string{"h2", "h3"}, []string{"h2", "h3"}, []string{"", ""}); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "OPTIMIZE TABLE runs FINAL"); err != nil {
		t.Fatal(err)
	}
	o := model.Options{Since: start.Add(52*time.Minute + 30*time.Second), Until: start.Add(2 * time.Hour), Site: "edge.example", Design: model.Design{All: true}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	st, err := prepare("points_rollup.sql", &o, query.NewWindow(o.Since, o.Until, start.Add(3*time.Hour)), nil)
	if err != nil {
		t.Fatal(err)
	}
	var read atomic.Uint64
	qctx := clickhouse.Context(ctx, clickhouse.WithProgress(func(p *clickhouse.Progress) { read.Add(p.Rows) }))
	var samples uint64
	if err := st.Each(qctx, conn, "points", func(rows driver.Rows) error {
		var grp, oc, ord string
		var n, s uint64
		var q []float32
		if err := rows.Scan(&grp, &oc, &ord, &n, &s, &q); err != nil {
			return err
		}
		if grp == "" {
			samples = s // the grand total
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const edgeRuns = runs / 48 // 2.5 of 120 minutes
	if samples != 2*edgeRuns {
		t.Errorf("the edge's requests: %d, want %d", samples, 2*edgeRuns)
	}
	t.Logf("read %d rows for an edge of %d runs", read.Load(), edgeRuns)
	if got := read.Load(); got > edgeRuns+3*1024 {
		t.Errorf("read %d rows for an edge of %d runs of %d: want the edge's granules alone", got, edgeRuns, runs)
	}
}

// TestAnalyseAllOnAnotherPopulation: the bootstrap runs before the point
// estimates are in, with each group's population from the run counts; a
// group the point estimates count otherwise is bootstrapped again with
// their count, and so is the site-wide line, so that the figures are those
// of a bootstrap that assumed the right populations from the start.
func TestAnalyseAllOnAnotherPopulation(t *testing.T) {
	ctx := context.Background()
	o := &model.Options{Replicates: 200, Seed: 3, MaxRunsPerGroup: 40}
	names := []string{"EU", "NA"}
	build := func() (map[string]*model.Group, map[string][]stats.Run) {
		rng := rand.New(rand.NewPCG(8, 9))
		byName, byGroup := map[string]*model.Group{}, map[string][]stats.Run{}
		for _, name := range names {
			g, rs := smallGroup(rng, 40, 5, 60)
			g.Group = name
			g.Runs, g.Sampled = 400, true // the fetched runs are a tenth of the group's
			slices.SortFunc(rs, stats.CompareRuns)
			byName[name], byGroup[name] = g, rs
		}
		return byName, byGroup
	}
	report := func(assumed map[string]int) string {
		groups, byGroup := build()
		site := analyseAll(ctx, o, groups, byGroup, resampleAll(ctx, o, names, byGroup, assumed))
		b, err := json.Marshal(struct {
			Groups map[string]*model.Group
			Site   *model.SiteWide
		}{groups, site})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	right := report(map[string]int{"EU": 400, "NA": 400})
	if !strings.Contains(right, `"ci_low_ms"`) {
		t.Fatalf("no interval in %s", right)
	}
	if got := report(map[string]int{}); got != right {
		t.Errorf("bootstrapped as all of each group, then counted as a tenth:\n%s\nwant, as bootstrapped with the count:\n%s", got, right)
	}
	if got := report(map[string]int{"EU": 400}); got != right {
		t.Errorf("one group bootstrapped as all of it:\n%s\nwant:\n%s", got, right)
	}
}
