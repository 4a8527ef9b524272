package queries

import (
	"context"
	"encoding/json"
	"math"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/params"
	"github.com/h3rum/h3rum/queries/synth"
)

// TestHeadlineIgnoresPlantedTraps stores clean runs with known durations
// and, beside them, runs carrying each trap of issue 9 with a bias that
// would move the figures if it leaked in: fallback runs with a slow H2
// batch, cold batches that paid for a handshake, partial runs that kept
// only fast requests, and a second design that is much slower. The
// headline must equal the clean runs' own quantiles, and every trap must
// be counted under its reason.
func TestHeadlineIgnoresPlantedTraps(t *testing.T) {
	conn := newDB(t)
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var (
		b              store.Batch
		h2, h3         []float64
		fresh, resumed int // runs of the clean design, and those whose QUIC handshake resumed
	)
	mk := func(i int, h2ms, h3ms float64, plant func(*store.Run)) {
		run := storetest.RunOf(t, beacontest.Run{Site: "trap", Warmup: 2})
		run.Received = at.Add(time.Duration(i) * time.Second)
		// The warm-ups open the connections: the first to the H3 origin
		// over TCP, the second over QUIC, resumed in every other run.
		w0, w1 := &run.Report.Samples[0], &run.Report.Samples[1]
		w0.Got, w0.Reused, w0.Connect, w0.Duration = beacon.ProtoH2, false, 40, 150
		w1.Reused, w1.Connect, w1.Duration, w1.Server.Resumed = false, 20, 100, i%2 == 0
		for k := range run.Report.Samples {
			s := &run.Report.Samples[k]
			if s.Phase != beacon.PhaseParallel {
				continue
			}
			d := h2ms
			if s.Want == beacon.ProtoH3 {
				d = h3ms
			}
			s.Duration = d + float64(k)
		}
		if plant != nil {
			plant(&run)
		}
		if run.Report.Params.Bytes == 0 && run.Report.Params.Extra == "" {
			fresh++
			if i%2 == 0 {
				resumed++
			}
		}
		b.Add(&run)
	}
	const clean = 60
	for i := range clean {
		mk(i, 100+float64(i), 80+float64(i), nil)
	}
	for _, r := range []struct{ i0, n int }{{0, clean}} {
		for i := r.i0; i < r.i0+r.n; i++ {
			for k := range 5 {
				h2 = append(h2, 100+float64(i)+float64(8+k))
				h3 = append(h3, 80+float64(i)+float64(3+k))
			}
		}
	}
	const traps = 7
	for i := range traps {
		// Fallback: the H3 batch went over TCP; the H2 batch is slow.
		mk(100+i, 900, 900, func(r *store.Run) {
			for k := range r.Report.Samples {
				if s := &r.Report.Samples[k]; s.Phase == beacon.PhaseParallel && s.Want == beacon.ProtoH3 {
					s.Got = beacon.ProtoH2
				}
			}
		})
		// Cold: an H3-batch request on a connection the warm-up did not use,
		// paying for a handshake.
		mk(200+i, 100, 600, func(r *store.Run) { r.Report.Samples[4].Server.ConnID = "new-connection" })
		// Partial: the page was hidden; only fast requests made it.
		mk(300+i, 5, 5, func(r *store.Run) { r.Report.Partial = true })
		// A second design: a bigger body, much slower.
		mk(400+i, 2000, 2000, func(r *store.Run) { r.Report.Params.Bytes = 100000 })
		// A third: the same batch, body and warm-ups, but a design
		// parameter beyond them (beacon.Params.Extra), slower still.
		mk(450+i, 2500, 2500, func(r *store.Run) { r.Report.Params.Extra = "gap=100" })
		// A failed request: left out of the headline, counted at the
		// timeout in the intention-to-treat view.
		mk(500+i, 100, 80, func(r *store.Run) {
			s := &r.Report.Samples[5]
			s.Error, s.Got, s.Duration = "timeout", beacon.ProtoUnknown, 0
		})
	}
	if err := b.Insert(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	slices.Sort(h2)
	slices.Sort(h3)

	for _, src := range []model.Source{model.SourceRaw, model.SourceRollup} {
		rep, err := Run(context.Background(), conn, model.Options{Since: at.Add(-time.Hour), Until: at.Add(2 * time.Hour), By: "none", Source: src, MinRuns: 1})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if rep.Design.Bytes != 0 || rep.Design.Extra != "" || len(rep.Designs) != 3 {
			t.Errorf("%s: design %+v of %+v, want the clean one (bytes 0, no extra) of three", src, rep.Design, rep.Designs)
		} else if rep.Designs[0].Runs != clean+4*traps || rep.Designs[1].Runs != traps || rep.Designs[1].Extra != "gap=100" ||
			rep.Designs[2].Runs != traps || rep.Designs[2].Bytes != 100000 {
			// Exact counts of every run with parallel requests: the clean
			// ones and the fallback, cold, partial and failed traps.
			t.Errorf("%s: designs %+v, want %d runs, then %d with gap=100, then %d with 100000 bytes", src, rep.Designs, clean+4*traps, traps, traps)
		}
		// The design with an extra parameter, asked for: its runs alone.
		other := rep.Design
		other.Extra, other.Set = "gap=100", true
		if x, err := Run(context.Background(), conn, model.Options{Since: at.Add(-time.Hour), Until: at.Add(2 * time.Hour), By: "none", Source: src, MinRuns: 1, Design: other}); err != nil {
			t.Errorf("%s: design %s: %v", src, other, err)
		} else if len(x.Groups) != 1 || x.Groups[0].H2 == nil || x.Groups[0].H2.Runs != traps || x.Groups[0].H2.Percentiles[0].MS < 2500 {
			t.Errorf("%s: design %s: groups %+v, want its %d runs at 2500 ms and more", src, other, x.Groups, traps)
		}
		if len(rep.Groups) != 1 {
			t.Fatalf("%s: %d groups", src, len(rep.Groups))
		}
		g := rep.Groups[0]
		if g.H2 == nil || g.H3 == nil || g.H2.Runs != clean || g.H3.Runs != clean || g.H2.Samples != 5*clean {
			t.Fatalf("%s: headline h2 %+v h3 %+v, want the %d clean runs", src, g.H2, g.H3, clean)
		}
		for i, p := range percentiles {
			for _, c := range []struct {
				name string
				s    *model.Stats
				data []float64
			}{{"h2", g.H2, h2}, {"h3", g.H3, h3}} {
				want := exactQuantile(c.data, p/100)
				// t-digest (rollup) or exact: within a millisecond on 300 values spread over 60 ms.
				if got := c.s.Percentiles[i].MS; math.Abs(got-want) > 1.5 {
					t.Errorf("%s %s p%v = %v, want the clean runs' %v", src, c.name, p, got, want)
				}
			}
		}
		wantEx := map[string]int{"fallback": traps, "cold": traps, "partial": traps, "failed": traps}
		for reason, n := range wantEx {
			if g.Excluded[reason] != n {
				t.Errorf("%s: %d runs excluded as %s, want %d (all: %v)", src, g.Excluded[reason], reason, n, g.Excluded)
			}
		}
		if g.ColdRuns["h3"] != traps || g.ColdRuns["h2"] != 0 {
			t.Errorf("%s: cold runs by origin %v, want h3 %d, h2 0", src, g.ColdRuns, traps)
		}
		const designRuns = clean + 4*traps
		if g.DesignRuns != designRuns {
			t.Errorf("%s: %d runs of the design, want %d", src, g.DesignRuns, designRuns)
		}
		// Availability per run: the fallback runs and the runs with a failed
		// H3 request are the ones without h3 throughout.
		if a := g.Availability; a == nil || a.Unit != "runs" || a.WantedH3 != designRuns || a.GotH3 != clean+2*traps {
			t.Errorf("%s: availability %+v, want %d of %d runs", src, a, clean+2*traps, designRuns)
		}
		// Intention to treat: every run of the design by origin, the failed
		// requests at the 10 s timeout, so the H3 origin's p99 is 10 s.
		itt := g.ITT
		// Runs and requests are counted exactly from either source (the
		// rollup's runs by excluded.sql).
		if itt == nil || itt.H3 == nil || itt.H2 == nil || itt.H3.Runs != designRuns || itt.H2.Runs != designRuns || itt.H3.Samples != 5*designRuns ||
			itt.H3.Failed != traps || itt.H3.FailedRuns != traps || itt.H2.Failed != 0 || len(itt.Diff) != len(percentiles) {
			t.Fatalf("%s: intention to treat %+v", src, itt)
		}
		if p99 := itt.H3.Percentiles[len(percentiles)-1].MS; math.Abs(p99-10000) > 100 {
			t.Errorf("%s: intention-to-treat H3 p99 = %v, want the 10 s timeout", src, p99)
		}
		// Handshakes: the first request on each new connection, by protocol.
		if len(g.Handshakes) != 2 {
			t.Fatalf("%s: handshakes %+v", src, g.Handshakes)
		}
		for _, h := range g.Handshakes {
			wantMS, wantResumed := 150.0, 0.0
			if h.Proto == "h3" {
				wantMS, wantResumed = 100, float64(resumed)/float64(fresh)
			}
			if h.Samples != fresh || math.Abs(h.Percentiles[0].MS-wantMS) > 0.01 || math.Abs(h.ResumedShare-wantResumed) > 1e-6 {
				t.Errorf("%s: %s handshakes %+v, want %d at %v ms, resumed %v", src, h.Proto, h, fresh, wantMS, wantResumed)
			}
		}
		if r := itt.H3.RunFailureRate; math.Abs(r-float64(traps)/float64(designRuns)) > 1e-6 || itt.H2.RunFailureRate != 0 ||
			*itt.H3.RunFailureLow > r || *itt.H3.RunFailureHigh < r {
			t.Errorf("%s: run failure rate %v [%v, %v], want %v", src, r, *itt.H3.RunFailureLow, *itt.H3.RunFailureHigh, float64(traps)/designRuns)
		}
	}
}

// TestHeadlineWeighsBatchOrdersEqually plants an order effect with
// unequal orders: 40 h2first runs in which H3 is 20 ms faster and 20
// h3first runs in which it is 60 ms faster. Weighing each order half, H3 −
// H2 at the median is −40 ms; pooling the runs would say −20 (two thirds
// of the H3 samples sit at 80 ms). Both the estimate (ClickHouse, raw and
// rollup) and the complete report (exact, bootstrap) must balance.
func TestHeadlineWeighsBatchOrdersEqually(t *testing.T) {
	conn := newDB(t)
	at := time.Date(2025, 4, 1, 12, 0, 0, 0, time.UTC)
	var b store.Batch
	for i := range 60 {
		run := storetest.RunOf(t, beacontest.Run{Site: "order", Warmup: 2})
		run.Received = at.Add(time.Duration(i) * time.Second)
		h3ms := 80.0
		run.Report.Params.Order = "h2first"
		if i%3 == 2 {
			h3ms, run.Report.Params.Order = 40, "h3first"
		}
		for k := range run.Report.Samples {
			s := &run.Report.Samples[k]
			if s.Phase != beacon.PhaseParallel {
				continue
			}
			s.Duration = 100
			if s.Want == beacon.ProtoH3 {
				s.Duration = h3ms
			}
		}
		b.Add(&run)
	}
	if err := b.Insert(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	for _, src := range []model.Source{model.SourceRaw, model.SourceRollup} {
		o := model.Options{Since: at.Add(-time.Hour), Until: at.Add(2 * time.Hour), By: "none", Source: src, MinRuns: 1, Replicates: 200}
		est, err := Estimate(context.Background(), conn, o)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		rep, err := Run(context.Background(), conn, o)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		for _, c := range []struct {
			name string
			r    *model.Report
		}{{"estimate", est.Report}, {"complete", rep}} {
			if len(c.r.Groups) != 1 || c.r.Groups[0].H3 == nil || c.r.Groups[0].H2 == nil {
				t.Fatalf("%s %s: groups %+v", src, c.name, c.r.Groups)
			}
			g := c.r.Groups[0]
			if o := g.H3.RunsByOrder; o.H2First != 40 || o.H3First != 20 {
				t.Errorf("%s %s: H3 runs by order %+v, want 40 h2first, 20 h3first", src, c.name, o)
			}
			if h3 := g.H3.Percentiles[0].MS; math.Abs(h3-60) > 0.5 {
				t.Errorf("%s %s: H3 p50 = %v, want 60 (80 and 40 weighed equally)", src, c.name, h3)
			}
			if d := g.Diff[0].MS; math.Abs(d+40) > 0.5 {
				t.Errorf("%s %s: H3 − H2 at p50 = %v, want −40", src, c.name, d)
			}
		}
		g := rep.Groups[0]
		if p := g.Paired; p == nil || math.Abs(p.MedianMS+40) > 1e-6 || math.Abs(p.H3WonShare-1) > 1e-6 {
			t.Errorf("%s: paired %+v, want a median of −40", src, p)
		}
		if d := g.Diff[0]; d.CILowMS == nil || *d.CILowMS > -40 || *d.CIHighMS < -40 {
			t.Errorf("%s: H3 − H2 at p50 %+v: −40 outside its interval", src, d)
		}
	}
}

// A headline report (headline=1, what the dashboard's map asks for) has
// the complete report's headline, intervals and verdicts exactly, and
// none of the sections it leaves out.
func TestHeadlineOnly(t *testing.T) {
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 12, Runs: 600}))
	ctx := context.Background()
	o, err := params.OptionsFromValues(url.Values{"since": {testSince.Format(time.RFC3339)}, "until": {testUntil.Format(time.RFC3339)}, "headline": {"1"}}, testUntil)
	if err != nil || !o.Headline || params.Values(&o).Get("headline") != "1" {
		t.Fatalf("headline=1: %+v, %v; values %v", o.Headline, err, params.Values(&o))
	}
	head, err := Run(ctx, conn, o)
	if err != nil {
		t.Fatal(err)
	}
	// The dashboard's path, the estimate and then the runs, alike.
	est, err := Estimate(ctx, conn, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := est.AddRuns(ctx, conn); err != nil || est.Trend != nil || est.FirstContact != nil || len(est.Verdicts) != len(head.Verdicts) {
		t.Errorf("headline by Estimate and AddRuns: %v, trend %v, first contact %v, %d verdicts (Run: %d)", err, est.Trend != nil, est.FirstContact != nil, len(est.Verdicts), len(head.Verdicts))
	}
	o.Headline = false
	full, err := Run(ctx, conn, o)
	if err != nil {
		t.Fatal(err)
	}
	if !head.Filters.HeadlineOnly || full.Filters.HeadlineOnly {
		t.Errorf("filters say headline only %v (headline) and %v (complete)", head.Filters.HeadlineOnly, full.Filters.HeadlineOnly)
	}
	if head.Trend != nil || head.FirstContact != nil || head.ScriptErrors != nil {
		t.Errorf("headline report has left-out sections: trend %v, first contact %v, script errors %v", head.Trend != nil, head.FirstContact != nil, head.ScriptErrors != nil)
	}
	if full.Trend == nil || full.FirstContact == nil {
		t.Fatalf("the complete report lacks its sections")
	}
	if len(head.Groups) == 0 || len(head.Groups) != len(full.Groups) {
		t.Fatalf("%d groups, complete %d", len(head.Groups), len(full.Groups))
	}
	for i := range head.Groups {
		h, f := head.Groups[i], full.Groups[i]
		if len(h.Handshakes) != 0 || len(h.Failures) != 0 || h.ITT != nil || h.Curves != nil || f.ITT == nil || f.Curves == nil {
			t.Errorf("%s: handshakes %d, failures %d, ITT %v, curves %v (complete: ITT %v, curves %v)", h.Group, len(h.Handshakes), len(h.Failures),
				h.ITT != nil, h.Curves != nil, f.ITT != nil, f.Curves != nil)
		}
		for _, part := range []struct {
			name string
			a, b any
		}{{"h2", h.H2, f.H2}, {"h3", h.H3, f.H3}, {"diff", h.Diff, f.Diff}, {"paired", h.Paired, f.Paired}, {"availability", h.Availability, f.Availability}} {
			ja, _ := json.Marshal(part.a)
			jb, _ := json.Marshal(part.b)
			if string(ja) != string(jb) {
				t.Errorf("%s %s: headline %s, complete %s", h.Group, part.name, ja, jb)
			}
		}
	}
	jv, _ := json.Marshal(head.Verdicts)
	jf, _ := json.Marshal(full.Verdicts)
	if len(head.Verdicts) == 0 || string(jv) != string(jf) {
		t.Errorf("verdicts: headline %s, complete %s", jv, jf)
	}
}

// TestHandshakesAllRetried: a group whose every new connection paid a
// QUIC Retry has no handshake to describe: its requests are counted as
// retried and its shares are 0 (a share of nothing, never NaN, which no
// report can carry), from raw rows and from the rollup, with and without
// edges.
func TestHandshakesAllRetried(t *testing.T) {
	conn := newDB(t)
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var b store.Batch
	const runs = 40
	for i := range runs {
		run := storetest.RunOf(t, beacontest.Run{Site: "retry", Warmup: 2})
		run.Received = at.Add(time.Duration(i) * time.Second)
		for k := range run.Report.Samples[:2] {
			s := &run.Report.Samples[k]
			s.Reused, s.Connect, s.Server.Retry = false, 20, true
		}
		b.Add(&run)
	}
	if err := b.Insert(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	for _, src := range []model.Source{model.SourceRaw, model.SourceRollup} {
		for _, since := range []time.Time{at, at.Add(-30 * time.Minute)} {
			rep, err := Run(context.Background(), conn, model.Options{Since: since, Until: since.Add(time.Hour), Site: "retry", By: "none", Source: src, Now: at.Add(2 * time.Hour)})
			if err != nil {
				t.Fatalf("%s from %s: %v", src, since.Format(time.TimeOnly), err)
			}
			retried := 0
			for _, g := range rep.Groups {
				for _, h := range g.Handshakes {
					retried += h.Retried
					if h.Samples != 0 || h.ResumedShare != 0 || h.EarlyShare != 0 {
						t.Errorf("%s from %s: %+v, want no request counted", src, since.Format(time.TimeOnly), h)
					}
				}
			}
			if retried != 2*runs {
				t.Errorf("%s from %s: %d retried, want %d", src, since.Format(time.TimeOnly), retried, 2*runs)
			}
		}
	}
}
