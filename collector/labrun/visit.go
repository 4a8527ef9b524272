package labrun

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/beacon/firefox"
	"github.com/h3rum/h3rum/collector/lab"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/render"
)

// engine is a browser the lab visits the demo page with.
type engine struct {
	name   string // "chromium" or "firefox"
	spki   string // chromium: the certificate's SPKI hash it trusts
	caFile string // firefox: the local CA its profile trusts
}

// pass is one engine's visits: their report (its own window) and the
// visits per region whose run never arrived.
type pass struct {
	engine engine
	runs   int // per region, unless the region says (runsOf)
	rep    *model.Report
	failed map[string]int
}

// runsOf is how many visits region r gets in a pass of runs per region:
// the region's own count, for Chromium, where it gives one.
func runsOf(r *lab.RegionLink, e engine, runs int) int {
	if e.name == "chromium" && r.Runs > 0 {
		return r.Runs
	}
	return runs
}

// browserPass runs an engine's visits from every region and reports them
// by continent over the pass's own window.
func (r *run) browserPass(ctx context.Context, e engine, runs int) (*pass, error) {
	var own []string
	for _, reg := range r.lab.Regions {
		if n := runsOf(reg, e, runs); n != runs {
			own = append(own, fmt.Sprintf("%s %d", reg.Name, n))
		}
	}
	if len(own) > 0 {
		fmt.Fprintf(r.out, "\n%s: %d visits per region (%s)\n", e.name, runs, strings.Join(own, ", "))
	} else {
		fmt.Fprintf(r.out, "\n%s: %d visits per region\n", e.name, runs)
	}
	start := time.Now().UTC().Add(-time.Second)
	failed := r.visit(ctx, e, runs)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep, err := queries.Run(ctx, r.conn, model.Options{Since: start, Until: time.Now().UTC().Add(time.Second), By: "continent",
		IncludeBots: true, MinRuns: 1})
	if err != nil {
		return nil, fmt.Errorf("lab report (%s): %w", e.name, err)
	}
	fmt.Fprintln(r.out)
	if err := render.Table(r.out, rep); err != nil {
		return nil, err
	}
	return &pass{engine: e, runs: runs, rep: rep, failed: failed}, nil
}

// visit runs the engine's visits of the demo page, runs from every region,
// at most Concurrency at a time, each waiting until its run is stored.
// It returns the visits per region whose run never arrived.
func (r *run) visit(ctx context.Context, e engine, runs int) map[string]int {
	jobs := make(chan *lab.RegionLink)
	var (
		mu      sync.Mutex
		failed  = map[string]int{}
		done    int
		nfailed int
		wg      sync.WaitGroup
	)
	page := fmt.Sprintf("https://%s:%d/demo", h3Host, h3Port)
	rules := fmt.Sprintf("MAP %s %s, MAP %s %s", h3Host, lab.CollectorAddr, h2Host, lab.CollectorAddr)
	planned := make([]int, len(r.lab.Regions))
	total := 0
	for i, reg := range r.lab.Regions {
		planned[i] = runsOf(reg, e, runs)
		total += planned[i]
	}
	began := time.Now()
	for range r.Concurrency {
		wg.Go(func() {
			for reg := range jobs {
				err := r.visitOnce(ctx, reg, page, rules, e)
				mu.Lock()
				done++
				if err != nil {
					failed[reg.Name]++
					nfailed++
					fmt.Fprintf(r.out, "  %s: %v\n", reg.Name, err)
				}
				if done%10 == 0 || done == total {
					el := time.Since(began)
					left := time.Duration(float64(el) / float64(done) * float64(total-done)).Round(time.Second)
					fmt.Fprintf(r.out, "  %d of %d %s visits, %s so far, about %s left in this pass (%d failed)\n", done, total, e.name, el.Round(time.Second), left, nfailed)
				}
				mu.Unlock()
			}
		})
	}
	for _, i := range lab.Schedule(planned) {
		select {
		case jobs <- r.lab.Regions[i]:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	return failed
}

// browser is what the lab needs of a running browser.
type browser interface {
	Done() <-chan struct{}
	Output() string
	Close() error
}

// visitOnce loads the demo page in a fresh headless browser inside the
// region's namespace and waits until the region has one more run stored.
func (r *run) visitOnce(ctx context.Context, reg *lab.RegionLink, page, rules string, e engine) error {
	ctx, cancel := context.WithTimeout(ctx, r.RunTimeout)
	defer cancel()
	count := func() (uint64, error) {
		var n uint64
		err := r.conn.QueryRow(ctx, "SELECT uniqExact(run_id) FROM samples WHERE country = ? AND source = 'browser'", reg.Country).Scan(&n)
		return n, err
	}
	before, err := count()
	if err != nil {
		return err
	}
	var b browser
	// Forked on a thread inside the region's namespace, the browser lives there.
	err = reg.Namespace.Do(func() error {
		var err error
		if e.name == "firefox" {
			// Both origins' names resolve to the collector; DNS over HTTPS
			// stays off.
			b, err = firefox.Start(ctx, page, firefox.Options{CAFile: e.caFile, Prefs: map[string]string{
				"network.dns.forceResolve": strconv.Quote(lab.CollectorAddr.String()), "network.trr.mode": "5"}})
			return err
		}
		// A dummy QUIC origin of the same host makes Chromium accept the
		// SPKI-trusted certificate over QUIC too, while HTTP/3 is still
		// found through Alt-Svc.
		b, err = chromium.Start(ctx, page, chromium.Options{SPKI: []string{e.spki}, HostResolverRules: rules, ForceQUICOn: h3Host + ":1"})
		return err
	})
	if err != nil {
		return err
	}
	defer b.Close()
	for {
		n, err := count()
		if err != nil {
			return err
		}
		if n > before {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no run stored within %s (%s: %s)", r.RunTimeout, e.name, tailString(b.Output(), 3))
		case <-b.Done():
			return fmt.Errorf("%s exited before its run was stored: %s", e.name, tailString(b.Output(), 3))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
