package queries

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/synth"
)

// goldenCases are reports that between them take every query path: each
// source, each grouping, the drill-downs, the widening options, a window
// of whole hours and one with raw edges, an estimate, a pooled design and
// a comparison.
var goldenCases = []struct {
	name string
	o    model.Options
	base time.Duration // a comparison against the window this much earlier
}{
	{name: "rollup-continent", o: model.Options{}},
	{name: "rollup-country-whole-hours", o: model.Options{By: "country", Since: time.Date(2025, 1, 1, 1, 0, 0, 0, time.UTC), Until: time.Date(2025, 1, 2, 23, 0, 0, 0, time.UTC)}},
	{name: "rollup-none-site", o: model.Options{By: "none", Site: "other.org"}},
	{name: "raw-country", o: model.Options{By: "country", Source: model.SourceRaw}},
	{name: "raw-failed-excluded", o: model.Options{By: "country", Source: model.SourceRaw, IncludeFailed: true, IncludeExcluded: true}},
	{name: "raw-bots-excluded", o: model.Options{By: "continent", Source: model.SourceRaw, IncludeBots: true, IncludeExcluded: true}},
	{name: "raw-asn-continent", o: model.Options{By: "asn", Continent: "EU"}},
	{name: "raw-subdivision-country", o: model.Options{By: "subdivision", Country: "US"}},
	{name: "browser-widened", o: model.Options{By: "browser", IncludeFailed: true, IncludeExcluded: true, IncludeBots: true}},
	{name: "connection-warmup", o: model.Options{By: "connection", IncludeWarmup: true}},
	{name: "collector-failed", o: model.Options{By: "collector", IncludeFailed: true}},
	{name: "design-all", o: model.Options{By: "none", Design: model.Design{All: true}}},
	{name: "design-set", o: model.Options{Design: model.Design{Parallel: 5, Bytes: 0, Warmup: 1, BeaconMajor: 1, Extra: "x=it's", Set: true}}},
	{name: "agent", o: model.Options{Agent: true}},
	{name: "headline", o: model.Options{By: "country", Headline: true}},
	{name: "experiment", o: model.Options{By: "country", Experiment: true}},
	{name: "thinned", o: model.Options{By: "none", MaxRunsPerGroup: 1500}},
	{name: "compare", o: model.Options{Since: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)}, base: 24 * time.Hour},
}

// TestReportGolden: every golden case's JSON, on each engine, is
// byte-equal to testdata/golden; a change to how reports are computed
// that should not change a figure proves it here (-update rewrites them).
func TestReportGolden(t *testing.T) {
	rows := synth.All(synth.Config{Seed: 13, Runs: 3000})
	// One thread per query: a t-digest merged from parallel threads may
	// differ in its last digits from run to run, which is no change.
	ctx := clickhouse.Context(context.Background(), clickhouse.WithSettings(clickhouse.Settings{"max_threads": 1}))
	for _, e := range []storetest.Engine{storetest.Managed, storetest.Chdb} {
		conn := storetest.DBOn(t, e)
		load(t, conn, rows)
		for _, c := range goldenCases {
			got := goldenReport(t, ctx, conn, c.o, c.base)
			file := filepath.Join("testdata", "golden", string(e), c.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test ./queries -run TestReportGolden -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				var a, b any
				_, _ = json.Unmarshal(got, &a), json.Unmarshal(want, &b)
				d := jsonDiff("", a, b)
				t.Errorf("%s on %s: the report differs from %s in %d places, first %v", c.name, e, file, len(d), d[:min(len(d), 3)])
			}
		}
	}
}

func goldenReport(t *testing.T, ctx context.Context, conn driver.Conn, o model.Options, base time.Duration) []byte {
	t.Helper()
	if o.Since.IsZero() {
		o.Since = testSince
	}
	if o.Until.IsZero() {
		o.Until = testUntil
	}
	o.Now = testUntil.Add(time.Hour)
	var (
		v   any
		err error
	)
	if base > 0 {
		v, err = Compare(ctx, conn, o, o.Since.Add(-base), o.Until.Add(-base))
	} else if o.Headline {
		v, err = Estimate(ctx, conn, o)
	} else {
		v, err = Run(ctx, conn, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeJSON(v) // what the handler sends
	if err != nil {
		t.Fatal(err)
	}
	return b
}
