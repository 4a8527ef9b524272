package store

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
)

var update = flag.Bool("update", false, "rewrite testdata/batch_columns.golden from Batch")

// goldenRuns are runs that between them give every column more than one
// value: a clean run, a cold and failed one from a bot on a collector with
// an id, a partial one, and an agent's with handshake samples.
func goldenRuns(t testing.TB) []*Run {
	t.Helper()
	decode := func(r beacontest.Run) *beacon.Report {
		rep, err := beacon.Decode(beacontest.Report(r))
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	at := time.Date(2026, 11, 30, 12, 34, 56, 789_000_000, time.UTC)
	geo := Geo{Continent: "EU", Country: "DE", Subdivision: "DE-BE", CityID: 2950159, ASN: 64500, ASOrg: "Example"}

	clean := &Run{Report: decode(beacontest.Run{ID: strings.Repeat("1", 32), Warmup: 2}), Received: at,
		Enrichment: Enrichment{Geo: geo, Browser: "Chrome", BrowserMajor: 121}}

	odd := &Run{Report: decode(beacontest.Run{ID: strings.Repeat("2", 32), Site: "b.example", Parallel: 3}),
		Received: at.Add(time.Hour), Enrichment: Enrichment{Browser: "Firefox", BrowserMajor: 140, Bot: true}}
	odd.Report.BeaconVersion = "12.3.4"
	odd.Report.Params.Order, odd.Report.Params.Trigger, odd.Report.Params.Extra = "h2first", "manual", "gap=100"
	odd.Report.Client.Mobile = true
	for i := range odd.Report.Samples {
		s := &odd.Report.Samples[i]
		s.Server.ConnID = "fra-1." + s.Server.ConnID
		if s.Phase == beacon.PhaseParallel && s.Want == beacon.ProtoH3 && s.Seq%2 == 0 {
			s.Server.ConnID += "-new" // cold
			s.Got, s.Server.Proto = beacon.ProtoH2, beacon.ProtoH2
		}
	}
	last := &odd.Report.Samples[len(odd.Report.Samples)-1]
	last.Error, last.Server = "timeout", beacon.ServerTiming{}
	last.Reused, last.Connect = false, 12.5

	partial := &Run{Report: decode(beacontest.Run{ID: strings.Repeat("3", 32), Site: "c.example"}), Received: at.Add(2 * time.Hour),
		Enrichment: Enrichment{Geo: Geo{Continent: "NA", Country: "US"}, Browser: "Safari", BrowserMajor: 18}}
	partial.Report.Partial = true
	partial.Report.Samples = partial.Report.Samples[:len(partial.Report.Samples)-2]

	agent := &Run{Report: decode(beacontest.Run{ID: strings.Repeat("4", 32)}), Received: at.Add(3 * time.Hour),
		Enrichment: Enrichment{Geo: geo, Source: SourceAgent}}
	agent.Handshakes = []beacon.Sample{
		{Seq: 0, Phase: beacon.PhaseHandshake, Want: beacon.ProtoH3, Got: beacon.ProtoH3, Duration: 20, Connect: 10,
			Server: beacon.ServerTiming{Present: true, Proto: beacon.ProtoH3, ConnID: "a.1"}},
		{Seq: 1, Phase: beacon.PhaseHandshake, Want: beacon.ProtoH2, Got: beacon.ProtoH2, Duration: 10, Connect: 10,
			Server: beacon.ServerTiming{Present: true, Proto: beacon.ProtoH2, Resumed: true, EarlyData: true}},
	}
	return []*Run{clean, odd, partial, agent}
}

// TestBatchColumnsGolden holds every column's values for goldenRuns to
// testdata/batch_columns.golden: a change to how a row is filled shows
// there. Rewrite it with -update only for an intended change.
func TestBatchColumnsGolden(t *testing.T) {
	var b Batch
	for _, r := range goldenRuns(t) {
		b.Add(r)
	}
	var got strings.Builder
	fmt.Fprintf(&got, "rows %d\n", b.Rows())
	for _, c := range b.cols {
		fmt.Fprintf(&got, "%s %s: %v\n", c.name(), c.chType(), c.values())
	}
	// A reset batch refills the same.
	b.Reset()
	for _, r := range goldenRuns(t) {
		b.Add(r)
	}
	var again strings.Builder
	fmt.Fprintf(&again, "rows %d\n", b.Rows())
	for _, c := range b.cols {
		fmt.Fprintf(&again, "%s %s: %v\n", c.name(), c.chType(), c.values())
	}
	if again.String() != got.String() {
		t.Errorf("a reset batch fills differently:\n%s\nfirst:\n%s", again.String(), got.String())
	}

	path := filepath.Join("testdata", "batch_columns.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("batch columns differ from %s (go test ./ingest/store -run TestBatchColumnsGolden -update if intended):\n%s", path, got.String())
	}
}

// BenchmarkBatchAdd measures filling the columns from decoded runs, the
// batcher's share of ingest before the driver takes the columns.
func BenchmarkBatchAdd(b *testing.B) {
	runs := goldenRuns(b)
	var batch Batch
	rows := 0
	for b.Loop() {
		batch.Reset()
		for range 100 {
			for _, r := range runs {
				batch.Add(r)
			}
		}
		rows = batch.Rows()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}
