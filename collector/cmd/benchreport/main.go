// Command benchreport times the h3rum report against a local ClickHouse
// loaded with synthetic samples: the default report (the median of at
// least 5 runs over at least 3 s, after one untimed) from raw rows and from
// the hourly rollup, and the dashboard's first paint in headless Chromium.
// Run it with `go run ./collector/cmd/benchreport -rows 10000000`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/chdb"
	"github.com/h3rum/h3rum/ingest/store/local"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/api"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/synth"
)

func main() {
	if code, ok := chdb.Serve(); ok { // this program run again as the 26.x server (-chdb)
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// Targets on the reference machine (2 cores), on either engine: the
// point estimates from raw rows and from the rollup (the stage the
// dashboard paints first), the complete report from the rollup over the
// default window and over exactly 24 h, and the dashboard's first paint.
// With -grow, each figure that reads no raw rows grows at most
// targetGrowth times from the first load to the grown one; a figure over
// raw rows grows with them, and its growth is printed.
const (
	targetRaw      = 150 * time.Millisecond
	targetRollup   = 50 * time.Millisecond
	targetComplete = 250 * time.Millisecond
	targetExact    = 300 * time.Millisecond
	targetPaint    = 500 * time.Millisecond
	targetGrowth   = 1.2
)

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	rows := fs.Int("rows", 10_000_000, "synthetic samples to load")
	grow := fs.Int("grow", 0, "after timing, load more samples up to this many in all, over the same 24 hours, time again and print each figure's growth (0: no)")
	batch := fs.Int("batch", 100_000, "rows per insert")
	repeat := fs.Int("n", 5, "timed repetitions per figure, at least (the median is reported)")
	minTime := fs.Duration("benchtime", 3*time.Second, "time each figure for at least this long too, in at most 100 repetitions")
	dir := fs.String("dir", "", "ClickHouse data directory, 26.x's under DIR/chdb with -chdb (default: a temporary one, removed at the end)")
	optimize := fs.Bool("optimize", true, "merge the parts of the rollups and count tables after loading (as background merges would)")
	noBrowser := fs.Bool("no-browser", false, "skip the Chromium first-paint measurement")
	only := fs.String("only", "", "time only the figures whose name contains this")
	reuse := fs.Bool("reuse", false, "with -dir or -dsn: keep the samples a previous run loaded there instead of loading more")
	dsn := fs.String("dsn", "", "a running ClickHouse to use instead of starting one in -dir")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed reports to this file")
	chdbLib := fs.String("chdb", "", "the chdb library (libchdb.so, make chdb fetches it): time ClickHouse 26.x, started for the run, instead of the managed 18.16")
	compare := fs.String("compare", "", "an earlier run's output (another engine's): print each figure's ratio to it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *reuse && *dir == "" && *dsn == "" {
		return errors.New("-reuse needs the -dir or -dsn of a previous run")
	}
	if *chdbLib != "" {
		if *dsn != "" {
			return errors.New("-chdb starts its own server: -dsn does not apply")
		}
		var srv *chdb.Server
		var err error
		if *dir != "" {
			srv, err = chdb.StartIn(ctx, *chdbLib, filepath.Join(*dir, "chdb"), nil)
		} else {
			srv, err = chdb.Start(ctx, *chdbLib, nil)
		}
		if err != nil {
			return err
		}
		defer func() {
			if err := srv.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "benchreport:", err)
			}
		}()
		if *dsn, err = srv.DSN("h3rum"); err != nil {
			return err
		}
	}
	if *rows <= 0 || *batch <= 0 || *repeat <= 0 || *minTime < 0 {
		return errors.New("-rows, -batch and -n must be positive, -benchtime not negative")
	}
	reps := repetitions{min: *repeat, time: *minTime}
	if *grow != 0 && (*grow <= *rows || *reuse) {
		return errors.New("-grow must be more than -rows, without -reuse")
	}
	if *dsn == "" {
		if *dir == "" {
			d, err := os.MkdirTemp("", "h3rum-benchreport-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(d)
			*dir = d
		}
		local := &local.Server{Dir: filepath.Join(*dir, "clickhouse")}
		if err := local.Start(ctx); err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			local.Stop(sctx)
		}()
		*dsn = local.DSN()
	}
	conn, err := store.Open(ctx, *dsn)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := store.Migrate(ctx, conn); err != nil {
		return err
	}

	// All samples fall in the 24 hours before now, so the default report
	// (--since 24h) covers every row.
	now := time.Now().UTC().Truncate(time.Second)
	var (
		stored uint64
		last   time.Time
	)
	if *reuse {
		if err := conn.QueryRow(ctx, "SELECT count(), max(time) FROM samples").Scan(&stored, &last); err != nil {
			return fmt.Errorf("counting stored samples: %w", err)
		}
	}
	if stored > 0 {
		// The loading run's last run was a minute before its now.
		now = last.UTC().Add(time.Minute)
		fmt.Fprintf(out, "reusing %d samples, the last at %s\n", stored, last.UTC().Format(time.RFC3339))
	} else if err := load(ctx, conn, out, now, 1, *rows, *batch, *optimize); err != nil {
		return err
	}

	// The default report: its window (the start of the hour 24 h before
	// now, to now) and the rollup's current hour are the product's
	// defaults. Now as well, as a reused load's present is its own. The
	// complete report over exactly 24 h, whose first partial hour is read
	// from raw rows, is timed beside it.
	opts := model.Options{Now: now}
	exact := model.Options{Since: now.Add(-24 * time.Hour), Until: now.Add(time.Second), Now: now}
	figures := []figure{
		{"default report, point estimates from raw rows", with(opts, model.SourceRaw), targetRaw, "points"},
		{"default report, point estimates from the rollup", with(opts, model.SourceAuto), targetRollup, "points"},
		{"default report, first part from raw rows", with(opts, model.SourceRaw), 0, "*"},
		{"default report, first part from the rollup", with(opts, model.SourceAuto), 0, "*"},
		{"default report, complete (raw)", with(opts, model.SourceRaw), 0, ""},
		{"default report, complete (rollup)", with(opts, model.SourceAuto), targetComplete, ""},
		{"exactly 24 h, complete (rollup)", with(exact, model.SourceAuto), targetExact, ""},
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// The same figures in Go's benchmark format, for make bench's JSON and
	// make bench-compare: the median in ms and, where there is a target,
	// median / target (at most 1 meets it); with -compare, median / the
	// other run's; after -grow, the grown load's figures and their growth.
	// A 26.x run's names end in /clickhouse-26.
	engine := ""
	if *chdbLib != "" {
		engine = "/clickhouse-26"
	}
	before, err := earlier(*compare)
	if err != nil {
		return err
	}
	var lines, missed []string
	benchLine := func(name string, n int, d, target time.Duration, extra string) {
		ms := float64(d) / float64(time.Millisecond)
		l := fmt.Sprintf("BenchmarkReport/%s%s\t%d\t%.4g ms", slug(name), engine, n, ms)
		if target > 0 {
			l += fmt.Sprintf("\t%.4g target-ratio", float64(d)/float64(target))
			if d > target {
				missed = append(missed, fmt.Sprintf("%s %s > %s", name, d.Round(100*time.Microsecond), target))
			}
		}
		if b, ok := before[slug(name)]; ok && b > 0 {
			l += fmt.Sprintf("\t%.4g engine-ratio", ms/b)
		}
		lines = append(lines, l+extra)
	}
	defer func() {
		fmt.Fprintln(out)
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
	}()
	first, err := timeFigures(ctx, conn, out, figures, reps, *only)
	if err != nil {
		return err
	}
	for _, r := range first {
		benchLine(r.name, r.runs, r.median, r.target, "")
	}
	if *grow > 0 {
		if err := load(ctx, conn, out, now, 2, *grow-*rows, *batch, *optimize); err != nil {
			return err
		}
		// Raw-row figures keep their targets at the first load only: they
		// grow with the rows by nature, and their growth is printed.
		atScale := slices.Clone(figures)
		for i := range atScale {
			if atScale[i].o.Source == model.SourceRaw {
				atScale[i].target = 0
			}
		}
		grown, err := timeFigures(ctx, conn, out, atScale, reps, *only)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\n%-52s %10s %10s %8s  %s\n", fmt.Sprintf("growth, %d to %d samples", *rows, *grow), "before", "after", "ratio", "target")
		for i, r := range grown {
			ratio := float64(r.median) / float64(first[i].median)
			target, extra := "- (raw rows: grows with them)", fmt.Sprintf("\t%.4g growth-ratio", ratio)
			if r.o.Source != model.SourceRaw {
				target = fmt.Sprintf("≤ %.1f ok", targetGrowth)
				if ratio > targetGrowth {
					target = fmt.Sprintf("≤ %.1f MISSED", targetGrowth)
					missed = append(missed, fmt.Sprintf("%s grew %.2f× > %.1f×", r.name, ratio, targetGrowth))
				}
			}
			fmt.Fprintf(out, "%-52s %10s %10s %8.2f  %s\n", r.name, first[i].median.Round(100*time.Microsecond), r.median.Round(100*time.Microsecond), ratio, target)
			benchLine(r.name+" grown", r.runs, r.median, r.target, extra)
		}
	}

	if !*noBrowser {
		paint, paintExact, static, err := firstPaint(ctx, conn, now)
		if err != nil {
			return fmt.Errorf("dashboard first paint: %w", err)
		}
		verdict := "ok"
		if paint > targetPaint {
			verdict = "MISSED"
		}
		fmt.Fprintf(out, "%-52s %10s %10s\n", "dashboard first contentful paint (Chromium)", paint.Round(time.Millisecond), fmt.Sprintf("≤ %s %s", targetPaint, verdict))
		fmt.Fprintf(out, "%-52s %10s %10s\n", "  the same over exactly 24 h", paintExact.Round(time.Millisecond), "-")
		fmt.Fprintf(out, "%-52s %10s %10s  the browser's own share\n", "  a static page of its head, same server and browser", static.Round(time.Millisecond), "-")
		benchLine("dashboard first contentful paint", 1, paint, targetPaint, "")
		benchLine("dashboard first contentful paint exactly 24 h", 1, paintExact, 0, "")
		benchLine("static page first contentful paint", 1, static, 0, "")
	}
	if len(missed) > 0 {
		return fmt.Errorf("%d targets missed: %s", len(missed), strings.Join(missed, "; "))
	}
	return nil
}

// A figure is a report timed with its target (0: none). Its stage is
// timed in the estimate alone, as the dashboard paints it first: Run
// reads the complete report's other sections beside it. "" is the whole
// complete report, "*" the whole estimate (designs, points, timeline).
type figure struct {
	name   string
	o      model.Options
	target time.Duration
	stage  string
}

// timed is a figure's median of its timed repetitions.
type timed struct {
	figure
	median time.Duration
	runs   int
}

// repetitions is how often a figure is timed: at least min times and for
// at least time, in at most maxRepetitions runs.
type repetitions struct {
	min  int
	time time.Duration
}

const maxRepetitions = 100

// timeFigures times each figure whose name contains only and prints its
// median, its middle half's range and the stages of the median run. Each
// figure first runs once untimed: the first report after a load or a
// restart reads cold caches. Timing cheap figures for a while, not just
// five times, keeps one slow second of a shared machine from moving their
// median.
func timeFigures(ctx context.Context, conn driver.Conn, out io.Writer, figures []figure, reps repetitions, only string) ([]timed, error) {
	fmt.Fprintf(out, "\n%-52s %10s %10s  %-22s %s\n", fmt.Sprintf("figure (median of ≥ %d runs, ≥ %s)", reps.min, reps.time), "time", "target", "runs, middle half", "stages of the median run")
	var res []timed
	for _, f := range figures {
		if !strings.Contains(f.name, only) {
			continue
		}
		if _, _, err := timeOnce(ctx, conn, f); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		var times []time.Duration
		var stages []string
		for t0 := time.Now(); len(times) < maxRepetitions && (len(times) < reps.min || time.Since(t0) < reps.time); {
			d, parts, err := timeOnce(ctx, conn, f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
			times = append(times, d)
			stages = append(stages, parts)
		}
		med, idx := median(times)
		target := "-"
		if f.target > 0 {
			verdict := "ok"
			if med > f.target {
				verdict = "MISSED"
			}
			target = fmt.Sprintf("≤ %s %s", f.target, verdict)
		}
		q1, q3 := quartiles(times)
		spread := fmt.Sprintf("%d, %s–%s", len(times), q1.Round(100*time.Microsecond), q3.Round(100*time.Microsecond))
		fmt.Fprintf(out, "%-52s %10s %10s  %-22s %s\n", f.name, med.Round(100*time.Microsecond), target, spread, stages[idx])
		res = append(res, timed{f, med, len(times)})
	}
	return res, nil
}

// timeOnce runs f's report once and returns its time (the whole report's
// or its stage's) and the stages' times.
func timeOnce(ctx context.Context, conn driver.Conn, f figure) (time.Duration, string, error) {
	run := queries.Run
	if f.stage != "" {
		run = func(ctx context.Context, conn driver.Conn, o model.Options) (*model.Report, error) {
			p, err := queries.Estimate(ctx, conn, o)
			if err != nil {
				return nil, err
			}
			return p.Report, nil
		}
	}
	t := time.Now()
	rep, err := run(ctx, conn, f.o)
	if err != nil {
		return 0, "", err
	}
	total := time.Since(t) // stages may overlap
	var parts []string
	pick := total
	for _, s := range rep.Stages {
		parts = append(parts, fmt.Sprintf("%s %s", s.Name, s.Elapsed.Round(100*time.Microsecond)))
		if s.Name == f.stage {
			pick = s.Elapsed
		}
	}
	return pick, strings.Join(parts, ", "), nil
}

// earlier reads the BenchmarkReport lines of another run's output (file;
// none for ""): each figure's median in ms, by slug, whatever its engine.
func earlier(file string) (map[string]float64, error) {
	m := map[string]float64{}
	if file == "" {
		return m, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("-compare: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 3 || !strings.HasPrefix(f[0], "BenchmarkReport/") || !strings.HasSuffix(f[2], " ms") {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(f[0], "BenchmarkReport/"), "/clickhouse-26")
		if v, err := strconv.ParseFloat(strings.TrimSuffix(f[2], " ms"), 64); err == nil {
			m[name] = v
		}
	}
	return m, nil
}

// slug is a figure's name as a benchmark name: letters, digits and dashes.
func slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// load inserts rows synthetic samples spread over the 24 hours before now,
// batch rows per insert, then merges the parts of the rollups and count
// tables when optimize. Loads of other seeds add other runs over the same
// hours.
func load(ctx context.Context, conn driver.Conn, out io.Writer, now time.Time, seed uint64, rows, batch int, optimize bool) error {
	start := now.Add(-24 * time.Hour).Add(time.Minute)
	span := 24*time.Hour - 2*time.Minute
	gen := synth.New(synth.Config{Seed: seed, Start: start, Span: span, Runs: rows / 14})
	t0 := time.Now()
	loaded := 0
	buf := make([]synth.Sample, 0, batch+gen.SamplesPerRun())
	for !gen.Done() && loaded < rows {
		buf = gen.Run(buf)
		if len(buf) >= batch || gen.Done() {
			if err := synth.Insert(ctx, conn, buf); err != nil {
				return err
			}
			loaded += len(buf)
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		if err := synth.Insert(ctx, conn, buf); err != nil {
			return err
		}
		loaded += len(buf)
	}
	loadTime := time.Since(t0)
	if optimize {
		// A live server merges the parts of the rollups and count tables in
		// the background; right after a bulk load there are ~rows/batch
		// unmerged parts of each (t-digest states, sums by key).
		for _, table := range []string{"samples_rollup", "itt_rollup", "handshake_rollup", "run_counts", "run_fact_counts", "failure_counts",
			"samples_rollup_5m", "itt_rollup_5m", "handshake_rollup_5m", "run_counts_5m", "run_fact_counts_5m", "failure_counts_5m"} {
			t1 := time.Now()
			if err := conn.Exec(ctx, "OPTIMIZE TABLE "+table+" FINAL"); err != nil {
				return fmt.Errorf("optimizing %s: %w", table, err)
			}
			fmt.Fprintf(out, "OPTIMIZE TABLE %s FINAL: %s\n", table, time.Since(t1).Round(time.Millisecond))
		}
	}
	fmt.Fprintf(out, "loaded %d samples in %s (%.0f rows/s), ClickHouse %s\n", loaded, loadTime.Round(time.Millisecond),
		float64(loaded)/loadTime.Seconds(), version(ctx, conn))
	return settle(ctx, conn, out, 3*time.Minute)
}

// settle waits, at most limit, until the server's background merges of
// the bulk load are done (none running in two polls a second apart), so
// that reports read the parts a live server holds minutes after its
// inserts, not the load's hundred of each table; it prints how long that
// took and the parts left of the two largest tables.
func settle(ctx context.Context, conn driver.Conn, out io.Writer, limit time.Duration) error {
	t0 := time.Now()
	idle := 0
	for idle < 2 && time.Since(t0) < limit {
		var running uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.merges WHERE database = currentDatabase()").Scan(&running); err != nil {
			return fmt.Errorf("reading the background merges: %w", err)
		}
		if running == 0 {
			idle++
		} else {
			idle = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	var samples, runs uint64
	if err := conn.QueryRow(ctx, "SELECT countIf(table = 'samples'), countIf(table = 'runs') FROM system.parts WHERE database = currentDatabase() AND active").Scan(&samples, &runs); err != nil {
		return fmt.Errorf("counting parts: %w", err)
	}
	fmt.Fprintf(out, "background merges settled in %s: %d parts of samples, %d of runs\n", time.Since(t0).Round(time.Second), samples, runs)
	return nil
}

func with(o model.Options, s model.Source) model.Options {
	o.Source = s
	return o
}

// median returns the median duration and the index of the run it came from.
func median(d []time.Duration) (time.Duration, int) {
	s := slices.Clone(d)
	slices.Sort(s)
	m := s[len(s)/2]
	return m, slices.Index(d, m)
}

// quartiles returns the first and third quartiles of d (the runs at a
// quarter and three quarters of the sorted runs).
func quartiles(d []time.Duration) (time.Duration, time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/4], s[(3*len(s))/4]
}

func version(ctx context.Context, conn driver.Conn) string {
	var v string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		return "?"
	}
	return v
}

// firstPaint serves the dashboard on loopback and reads the browser's
// first-contentful-paint time (from navigation start, so it includes the
// server computing the report) through the DevTools protocol. The same
// browser then paints a static page with the dashboard's head (its style
// sheet and script) and a heading: the baseline, what the browser and this
// machine take when the server takes nothing.
func firstPaint(ctx context.Context, conn driver.Conn, now time.Time) (dashboard, exact, static time.Duration, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, 0, err
	}
	mux := http.NewServeMux()
	(&api.Handler{Conn: conn, AllowOpen: true, Hub: &api.Hub{}}).Register(mux)
	mux.HandleFunc("GET /static", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>static</title>`+
			`<link rel="stylesheet" href="/dashboard.css"><script src="/dashboard.js" defer></script></head>`+
			`<body data-live="0"><header><h1>HTTP/3 vs HTTP/2</h1></header></body></html>`)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	b, err := chromium.Start(ctx, "about:blank", chromium.Options{DevTools: true, WindowSize: "1280,800"})
	if err != nil {
		return 0, 0, 0, err
	}
	defer b.Close()
	var page chromium.Page
	for page.WSURL == "" {
		pages, err := b.Pages(ctx)
		if err != nil {
			return 0, 0, 0, err
		}
		if len(pages) > 0 {
			page = pages[0]
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	base := "http://" + ln.Addr().String()
	// Three loads of each, in turn, so that none alone pays for the
	// renderer's start; the medians are reported. The dashboard as opened
	// (its default window, from the hour 24–25 h ago, spelt three ways so
	// that every URL differs), and over exactly 24 h, whose partial first
	// hour comes from raw rows.
	since := now.Add(-24 * time.Hour).Truncate(time.Hour)
	defaults := []string{"?since=" + since.Format(time.RFC3339), "?since=" + url.QueryEscape(since.In(time.FixedZone("", 3600)).Format(time.RFC3339)),
		"?since=" + url.QueryEscape(since.In(time.FixedZone("", -3600)).Format(time.RFC3339))}
	var paints, exacts, statics []time.Duration
	for i, exact := range []string{"?since=24h", "?since=1d", "?since=1440m"} {
		for _, l := range []struct {
			path, q string
			to      *[]time.Duration
		}{{"/static", exact, &statics}, {"/dashboard", defaults[i], &paints}, {"/dashboard", exact, &exacts}} {
			if err := b.Navigate(ctx, page, base+l.path+l.q); err != nil {
				return 0, 0, 0, err
			}
			d, err := waitPaint(ctx, b, page, l.q)
			if err != nil {
				return 0, 0, 0, err
			}
			*l.to = append(*l.to, d)
			// The dashboard goes on loading the complete report, which
			// is slow on a large table; navigating away then would leave its
			// queries running against the next load's first paint.
			// Its map then asks for the report by country: a visitor's next
			// page would wait for a report slot behind it, so the next
			// load starts once that has arrived.
			if err := waitJS(ctx, b, page, `document.readyState==="complete"&&(!document.getElementById("map")||performance.getEntriesByType("resource").some(e=>e.name.includes("/api/report")))`); err != nil {
				return 0, 0, 0, err
			}
		}
	}
	dashboard, _ = median(paints)
	exact, _ = median(exacts)
	static, _ = median(statics)
	return dashboard, exact, static, nil
}

// waitJS polls expr, a boolean expression, in page until it is true.
func waitJS(ctx context.Context, b *chromium.Browser, page chromium.Page, expr string) error {
	for {
		res, err := b.Call(ctx, page.WSURL, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
		if err == nil {
			var r struct {
				Result struct {
					Value bool `json:"value"`
				} `json:"result"`
			}
			if json.Unmarshal(res, &r) == nil && r.Result.Value {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func waitPaint(ctx context.Context, b *chromium.Browser, page chromium.Page, search string) (time.Duration, error) {
	expr := `(function(){var e=performance.getEntriesByName('first-contentful-paint');return location.search===` +
		strconv.Quote(search) + `&&e.length?e[0].startTime:-1})()`
	for {
		res, err := b.Call(ctx, page.WSURL, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
		if err == nil {
			var r struct {
				Result struct {
					Value float64 `json:"value"`
				} `json:"result"`
			}
			if json.Unmarshal(res, &r) == nil && r.Result.Value > 0 {
				return time.Duration(r.Result.Value * float64(time.Millisecond)), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
