package queries

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/model"
)

// TestAgentReportsStayApart: browser and agent runs of the same design in
// the same window never pool. The default report sees the browsers' runs
// only (from the rollup and from raw rows); the agent report sees the
// agent's runs and its handshakes by kind.
func TestAgentReportsStayApart(t *testing.T) {
	conn := newDB(t)
	at := time.Date(2025, 4, 1, 12, 0, 0, 0, time.UTC)
	const runs = 40
	var b store.Batch
	for i := range 2 * runs {
		agent := i%2 == 1
		run := storetest.RunOf(t, beacontest.Run{Site: "apart", Warmup: 2})
		run.Received = at.Add(time.Duration(i) * time.Second)
		h2ms, h3ms := 50.0, 40.0
		if agent {
			h2ms, h3ms = 200, 150
			run.Source, run.Browser = store.SourceAgent, "Agent"
			hs := func(seq int, want beacon.Proto, d float64, resumed, early bool) beacon.Sample {
				return beacon.Sample{Seq: seq, Phase: beacon.PhaseHandshake, Want: want, Got: want, Duration: d, Connect: d / 2,
					Server: beacon.ServerTiming{Present: true, Proto: want, Resumed: resumed, EarlyData: early}}
			}
			// The last paid a Retry's round trip: counted apart, out of the figures.
			retried := hs(5, beacon.ProtoH3, 500, false, false)
			retried.Server.Retry = true
			run.Handshakes = []beacon.Sample{hs(0, beacon.ProtoH3, 20, false, false), hs(1, beacon.ProtoH3, 10, true, true),
				hs(2, beacon.ProtoH3, 21, true, false), hs(3, beacon.ProtoH2, 30, false, false), hs(4, beacon.ProtoH2, 31, true, false), retried}
		}
		for k := range run.Report.Samples {
			if s := &run.Report.Samples[k]; s.Phase == beacon.PhaseParallel {
				s.Duration = map[beacon.Proto]float64{beacon.ProtoH2: h2ms, beacon.ProtoH3: h3ms}[s.Want]
			}
		}
		b.Add(&run)
	}
	if err := b.Insert(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		opts       model.Options
		h2, h3     float64
		handshakes map[string]float64 // proto+kind → p50
	}{
		{"browsers, rollup", model.Options{Source: model.SourceRollup}, 50, 40, nil},
		{"browsers, raw", model.Options{Source: model.SourceRaw}, 50, 40, nil},
		{"agent", model.Options{Agent: true}, 200, 150,
			map[string]float64{"h3 full": 20, "h3 0rtt": 10, "h3 resumed": 21, "h2 full": 30, "h2 resumed": 31}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.Since, o.Until, o.By, o.MinRuns = at.Add(-time.Hour), at.Add(2*time.Hour), "none", 1
			rep, err := Run(context.Background(), conn, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Groups) != 1 {
				t.Fatalf("%d groups", len(rep.Groups))
			}
			g := rep.Groups[0]
			if g.H2 == nil || g.H3 == nil || g.H2.Runs != runs || g.H2.Samples != 5*runs || g.DesignRuns != runs {
				t.Fatalf("headline h2 %+v h3 %+v, design runs %d: want %d runs", g.H2, g.H3, g.DesignRuns, runs)
			}
			if p50 := g.H2.Percentiles[0].MS; math.Abs(p50-tc.h2) > 0.5 {
				t.Errorf("h2 p50 %v, want %v", p50, tc.h2)
			}
			if p50 := g.H3.Percentiles[0].MS; math.Abs(p50-tc.h3) > 0.5 {
				t.Errorf("h3 p50 %v, want %v", p50, tc.h3)
			}
			if tc.handshakes == nil {
				for _, h := range g.Handshakes {
					if h.Kind != "" {
						t.Errorf("browser report has agent handshakes: %+v", h)
					}
				}
				return
			}
			if len(g.Handshakes) != len(tc.handshakes) {
				t.Fatalf("handshakes %+v, want %v", g.Handshakes, tc.handshakes)
			}
			for _, h := range g.Handshakes {
				want, ok := tc.handshakes[h.Proto+" "+h.Kind]
				if !ok || h.Samples != runs || math.Abs(h.Percentiles[0].MS-want) > 0.01 || math.Abs(h.FastestMS-want) > 0.01 || math.Abs(h.ConnectMS[0].MS-want/2) > 0.01 {
					t.Errorf("handshake %+v, want %d at %v ms", h, runs, want)
				}
				if wantRetried := map[bool]int{true: runs}[h.Proto+" "+h.Kind == "h3 full"]; h.Retried != wantRetried {
					t.Errorf("handshake %s %s: %d retried, want %d", h.Proto, h.Kind, h.Retried, wantRetried)
				}
			}
		})
	}
}
