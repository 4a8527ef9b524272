package queries

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
	"github.com/h3rum/h3rum/queries/stats"
)

func init() {
	register(section{
		name: "runs", part: runsPart, cost: heavy, headline: true,
		files: []string{"runs.sql", "runs_table.sql"},
		reads: []source{fromRaw, fromRunsTable},
		run: func(ctx context.Context, rep *build, conn driver.Conn) error {
			// The fetch starts once the groups' runs are counted, which the
			// exact counts from the rollup are before the point estimates;
			// the bootstrap, once those are in the groups.
			counts, err := rep.groupRuns.wait(ctx)
			if err != nil {
				return err
			}
			site, err := perRun(ctx, conn, &rep.opts, rep.win, counts, func(ctx context.Context) ([]*model.Group, error) {
				_, err := rep.pointsDone.wait(ctx)
				return rep.groups.all(), err
			})
			rep.SiteWide = site
			return err
		},
	})
}

// sampleBound is the largest id half a group of runs keeps to thin them
// to cap: the runs whose id's last eight bytes, read big-endian, are at
// most the bound are a uniform sample of cap/runs of them, since a run id
// is 128 random bits from the browser's CSPRNG. ClickHouse orders UUIDs by
// those bytes first, and the runs table and samples order an hour's rows
// by run id, so a bound is also a range of the primary key: the fetch
// reads only the granules below the largest group's bound, a number that
// grows with the cap, not with the site's traffic.
func sampleBound(runs, cap int) uint64 {
	if runs <= cap {
		return math.MaxUint64
	}
	return uint64(math.Ldexp(float64(cap)/float64(runs), 64))
}

// boundID is the largest run id whose last eight bytes are at most b, as
// ClickHouse orders UUIDs.
func boundID(b uint64) string {
	return fmt.Sprintf("ffffffff-ffff-ffff-%04x-%012x", b>>48, b&(1<<48-1))
}

// perRun fetches the runs of the groups counts names (each sampled down
// to MaxRunsPerGroup; counts nil: the groups' own, once done returns
// them), bootstraps them, and once done returns the groups with their
// point estimates computes confidence intervals, the paired view and
// availability, and the site-wide line over every group's runs.
func perRun(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, counts map[string]groupRuns,
	done func(context.Context) ([]*model.Group, error)) (*model.SiteWide, error) {
	if counts == nil {
		groups, err := done(ctx)
		if err != nil {
			return nil, err
		}
		counts = map[string]groupRuns{}
		for _, g := range groups {
			counts[g.Group] = groupRuns{runs: g.Runs, point: g.H2 != nil || g.H3 != nil || g.WantedH3GotH2 != nil}
		}
	}
	var names []string
	var bounds []uint64
	expect := map[string]int{} // runs each group should return: its cap, give or take the hash's spread
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		c := counts[name]
		if !c.point {
			continue
		}
		names = append(names, name)
		bounds = append(bounds, sampleBound(c.runs, o.MaxRunsPerGroup))
		expect[name] = min(c.runs, o.MaxRunsPerGroup) + min(c.runs, o.MaxRunsPerGroup)/8
	}
	if len(names) == 0 {
		return nil, nil
	}
	st, err := perRunQuery(o, w, names, bounds)
	if err != nil {
		return nil, err
	}
	byGroup, err := fetchRuns(ctx, conn, st, expect)
	if err != nil {
		return nil, err
	}
	// The bootstrap reads the runs alone: it runs while the point
	// estimates are still being read, and what needs them waits.
	for _, runs := range byGroup {
		// Row order varies; sorted, the bootstrap is reproducible for a
		// given seed.
		slices.SortFunc(runs, stats.CompareRuns)
	}
	populations := map[string]int{}
	for _, name := range names {
		if n := counts[name].runs; n > o.MaxRunsPerGroup {
			populations[name] = n
		}
	}
	pre := resampleAll(ctx, o, names, byGroup, populations)
	groups, err := done(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*model.Group{}
	for _, g := range groups {
		if g.H2 != nil || g.H3 != nil || g.WantedH3GotH2 != nil {
			byName[g.Group] = g
			g.Sampled = g.Runs > o.MaxRunsPerGroup
		}
	}
	site := analyseAll(ctx, o, byName, byGroup, pre)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("computing confidence intervals: %w", err)
	}
	return site, nil
}

// resampled is the bootstrap of the groups' runs, computed before their
// point estimates are in: each group's, with the population it assumed,
// and the site-wide line's pool.
type resampled struct {
	groups      map[string]*model.Resampled
	populations map[string]int
	names       []string // the groups pooled, those with runs
	site        *model.SitePool
}

// resampleAll bootstraps each group's runs (model.Resample) and, of
// several groups, the site-wide line's pool (model.NewSitePool), on all
// cores, the largest first so that the cores finish together.
func resampleAll(ctx context.Context, o *model.Options, names []string, byGroup map[string][]stats.Run, populations map[string]int) *resampled {
	r := &resampled{groups: map[string]*model.Resampled{}, populations: populations}
	for _, name := range names {
		if len(byGroup[name]) > 0 {
			r.names = append(r.names, name)
		}
	}
	type job struct {
		name string
		size int
		run  func()
	}
	var mu sync.Mutex
	var jobs []job
	for _, name := range r.names {
		runs := byGroup[name]
		jobs = append(jobs, job{name, len(runs), func() {
			res := model.Resample(ctx, name, runs, populations[name], o)
			mu.Lock()
			r.groups[name] = res
			mu.Unlock()
		}})
	}
	if len(r.names) > 1 {
		jobs = append(jobs, job{model.SiteGroup, o.MaxRunsPerGroup, func() { r.site = model.NewSitePool(ctx, r.names, byGroup, populations, o) }})
	}
	slices.SortFunc(jobs, func(a, b job) int { return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.name, b.name)) })
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			j.run()
		}()
	}
	wg.Wait()
	return r
}

// analyseAll completes each group's figures from its fetched runs and
// their bootstrap (pre), and makes the site-wide line: of several groups
// from its pool, of one group that group, once done. A group whose
// population differs from the one its bootstrap assumed, or that pre
// lacks, is bootstrapped again here, as is the line of such groups.
func analyseAll(ctx context.Context, o *model.Options, byName map[string]*model.Group, byGroup map[string][]stats.Run, pre *resampled) *model.SiteWide {
	var in []*model.Group
	var names []string
	same := true
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		runs := byGroup[name]
		if len(runs) == 0 {
			continue
		}
		g := byName[name]
		in, names = append(in, g), append(names, name)
		population := 0
		if g.Sampled {
			population = g.Runs
		}
		g.BootstrapRuns = len(runs)
		r := pre.groups[name]
		if r == nil || pre.populations[name] != population {
			same = false
			model.Analyse(ctx, g, runs, o)
			continue
		}
		model.Apply(g, runs, r)
	}
	if ctx.Err() != nil || len(in) == 0 {
		return nil
	}
	if len(in) > 1 && same && pre.site != nil && slices.Equal(names, pre.names) {
		return pre.site.Line(byName, o)
	}
	return model.SiteLine(ctx, in, byGroup, o)
}

// perRunQuery returns the query that fetches the runs of groups names,
// each thinned to the runs at most its bound (sampleBound): from the runs
// table, one row per run, when it holds the selection (parallel batches of
// browser runs, a grouping it has), by continent through each continent's
// range of its key; else from the samples.
func perRunQuery(o *model.Options, w query.Window, names []string, bounds []uint64) (query.Stmt, error) {
	name := "runs_table.sql"
	if !query.RunsTableSelects(o) {
		name = "runs.sql"
	}
	args := []any{clickhouse.Named("groups", names), clickhouse.Named("bounds", bounds),
		clickhouse.Named("bound", boundID(slices.Max(bounds)))}
	var adjust func(*query.Shape)
	if name == "runs_table.sql" && o.By == "continent" {
		// The table is sorted by continent within an hour: each
		// continent's sample is a range of its key of its own.
		for i, g := range names {
			args = append(args, clickhouse.Named(fmt.Sprintf("sample_continent_%d", i), query.ContinentOf(g)),
				clickhouse.Named(fmt.Sprintf("sample_bound_%d", i), boundID(bounds[i])))
		}
		adjust = func(s *query.Shape) { s.SampleRanges = len(names) }
	}
	return prepare(name, o, w, adjust, args...)
}

// fetchRuns runs st, a per-run query (runs.sql or runs_table.sql), and
// returns each group's runs in the order ClickHouse sent them. The query
// sends one row per run, its samples packed into strings (runs.sql says
// how). expect, if not nil, is about how many runs each group has, so
// that its slice is allocated once.
func fetchRuns(ctx context.Context, conn driver.Conn, st query.Stmt, expect map[string]int) (map[string][]stats.Run, error) {
	byGroup := map[string][]stats.Run{}
	// One set of scan targets and buffers for every row: declared in the
	// callback, the targets escaped to the heap for each row.
	var (
		g, db, ob, pb string
		h3            uint8
		d             []float32
		oc, par       []uint8
	)
	err := st.Each(ctx, conn, "per-run samples", func(rows driver.Rows) error {
		if err := rows.Scan(&g, &db, &ob, &pb, &h3); err != nil {
			return err
		}
		n := len(ob)
		if n == 0 || len(db) != 4*n || (pb != "" && len(pb) != n) {
			return fmt.Errorf("a run of group %q with %d bytes of durations, %d outcomes and %d parallel flags", g, len(db), n, len(pb))
		}
		d, oc, par = d[:0], append(oc[:0], ob...), par[:0]
		for i := 0; i < len(db); i += 4 {
			d = append(d, math.Float32frombits(binary.LittleEndian.Uint32([]byte(db[i:i+4]))))
		}
		if pb == "" {
			for range n {
				par = append(par, 1)
			}
		} else {
			par = append(par, pb...)
		}
		run := splitRun(d, oc, par)
		run.H3First = h3 == 1
		runs, ok := byGroup[g]
		if !ok && expect[g] > 0 {
			runs = make([]stats.Run, 0, expect[g])
		}
		byGroup[g] = append(runs, run)
		return nil
	})
	return byGroup, err
}

// splitRun splits one run's samples as the per-run query sends them
// (stats.SplitRun), by the store's outcome codes.
func splitRun(d []float32, oc, par []uint8) stats.Run {
	return stats.SplitRun(d, oc, par, kindOf)
}

// kindOf is what an outcome code is to the statistics.
func kindOf(oc uint8) stats.Kind {
	switch store.Outcome(oc) {
	case store.OutcomeH2:
		return stats.KindH2
	case store.OutcomeH3:
		return stats.KindH3
	case store.OutcomeWantedH3GotH2:
		return stats.KindFallback
	}
	return stats.KindOther
}
