package render

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/synth"
)

var update = flag.Bool("update", false, "rewrite deploy/grafana/h3rum-clickhouse.json from GrafanaDashboard")

const grafanaFile = "../../deploy/grafana/h3rum-clickhouse.json"

// TestGrafanaDashboard keeps the committed ClickHouse dashboard equal to
// GrafanaDashboard, then runs every panel's and variable's SQL, with the
// data source's macros and the variables filled in as Grafana would, on
// the same rows as a report — and the panels must show the report's
// figures: percentiles and their differences by region (the estimate's,
// from the same rollup states), HTTP/3 availability per run and the
// hourly volume.
func TestGrafanaDashboard(t *testing.T) {
	want, err := GrafanaDashboard(queries.PanelSQL)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(grafanaFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what GrafanaDashboard makes: run go test ./queries/render -run TestGrafanaDashboard -update", grafanaFile)
	}
	var d struct {
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
		Panels []struct {
			Title   string
			Targets []struct {
				RawSQL string `json:"rawSql"`
			}
		}
	}
	if err := json.Unmarshal(got, &d); err != nil {
		t.Fatal(err)
	}

	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 3, Runs: 1500}))
	// A range on five-minute boundaries reads the twins' slots at its
	// edges, one off them the minutes around them from per-run rows too,
	// and two under an hour long no whole hour (the second within one hour,
	// ending after its last five minutes' start).
	for _, w := range [][2]time.Time{
		{testSince, testUntil},
		{testSince.Add(137 * time.Second), testUntil.Add(-79 * time.Second)},
		{testSince.Add(3*time.Hour + 7*time.Minute + 11*time.Second), testSince.Add(3*time.Hour + 48*time.Minute + 5*time.Second)},
		{testSince.Add(3*time.Hour + 7*time.Minute + 11*time.Second), testSince.Add(3*time.Hour + 28*time.Minute + 5*time.Second)},
	} {
		since, until := w[0], w[1]
		t.Logf("range %s to %s", since.Format(time.TimeOnly), until.Format(time.TimeOnly))
		ctx := context.Background()
		o := model.Options{Since: since, Until: until, By: "continent", Replicates: -1}
		est, err := queries.Estimate(ctx, conn, o)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := queries.Run(ctx, conn, o)
		if err != nil {
			t.Fatal(err)
		}
		if est.Source != "rollup" || len(est.Groups) < 3 {
			t.Fatalf("estimate from %s with %d groups", est.Source, len(est.Groups))
		}
		fill := strings.NewReplacer(
			"$__fromTime", fmt.Sprintf("toDateTime(%d)", since.Unix()),
			"$__toTime", fmt.Sprintf("toDateTime(%d)", until.Unix()),
			"${site:sqlstring}", "''",
			"${design:sqlstring}", "'"+rep.Design.String()+"'",
		)
		query := func(what, sql string) ([]string, [][]any) {
			t.Helper()
			rows, err := conn.Query(ctx, fill.Replace(sql))
			if err != nil {
				t.Fatalf("%s: %v\n%s", what, err, fill.Replace(sql))
			}
			defer rows.Close()
			cols := rows.Columns()
			var out [][]any
			for rows.Next() {
				vals := make([]any, len(cols))
				for i, ct := range rows.ColumnTypes() {
					vals[i] = newScanValue(ct.ScanType())
				}
				if err := rows.Scan(vals...); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				out = append(out, vals)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			return cols, out
		}
		for _, v := range d.Templating.List {
			sql, ok := v.Query.(string)
			if !ok || v.Type != "query" {
				continue // the data source picker
			}
			_, rows := query("variable "+fmt.Sprint(v.Name), sql)
			if len(rows) == 0 {
				t.Errorf("variable %v lists nothing", v.Name)
			}
			if v.Name == "design" && deref(rows[0][0]) != rep.Design.String() {
				t.Errorf("design variable's first value %v, want the report's %s", deref(rows[0][0]), rep.Design)
			}
		}
		if len(d.Panels) != 3 {
			t.Fatalf("%d panels", len(d.Panels))
		}
		byName := func(cols []string, row []any) map[string]any {
			m := map[string]any{}
			for i, c := range cols {
				m[c] = deref(row[i])
			}
			return m
		}
		num := func(v any) float64 {
			switch x := v.(type) {
			case float64:
				return x
			case float32:
				return float64(x)
			case uint64:
				return float64(x)
			}
			t.Fatalf("not a number: %T %v", v, v)
			return 0
		}
		// Percentiles by region, against the estimate (same rollup states).
		cols, rows := query(d.Panels[0].Title, d.Panels[0].Targets[0].RawSQL)
		if len(rows) != len(est.Groups) {
			t.Errorf("percentile panel: %d regions, the report %d", len(rows), len(est.Groups))
		}
		groups := map[string]*model.Group{}
		for i := range est.Groups {
			groups[est.Groups[i].Group] = &est.Groups[i]
		}
		for _, r := range rows {
			m := byName(cols, r)
			g := groups[fmt.Sprint(m["region"])]
			if g == nil || g.H2 == nil || g.H3 == nil {
				t.Errorf("percentile panel: region %v not in the report", m["region"])
				continue
			}
			for _, c := range []struct {
				col string
				k   int
			}{{"p50", 0}, {"p90", 2}, {"p95", 3}} {
				h2, h3 := g.H2.Percentiles[c.k].MS, g.H3.Percentiles[c.k].MS
				for col, want := range map[string]float64{"h2_" + c.col + "_ms": h2, "h3_" + c.col + "_ms": h3, "h3_minus_h2_" + c.col + "_ms": h3 - h2} {
					if got := num(m[col]); math.Abs(got-want) > 0.06 {
						t.Errorf("%s %s = %v, the report's %v", g.Group, col, got, want)
					}
				}
			}
			if s := num(m["samples"]); int(s) != g.H2.Samples+g.H3.Samples {
				t.Errorf("%s: %v samples, the report %d", g.Group, s, g.H2.Samples+g.H3.Samples)
			}
		}
		// Availability per run, against the complete report.
		full := map[string]*model.Group{}
		for i := range rep.Groups {
			full[rep.Groups[i].Group] = &rep.Groups[i]
		}
		cols, rows = query(d.Panels[1].Title, d.Panels[1].Targets[0].RawSQL)
		if len(rows) == 0 {
			t.Error("availability panel is empty")
		}
		for _, r := range rows {
			m := byName(cols, r)
			g := full[fmt.Sprint(m["region"])]
			if g == nil || g.Availability == nil || g.Availability.Unit != "runs" ||
				int(num(m["runs_with_h3_batch"])) != g.Availability.WantedH3 || int(num(m["runs_all_h3"])) != g.Availability.GotH3 ||
				math.Abs(num(m["h3_availability"])-g.Availability.Share) > 1e-4 {
				t.Errorf("availability panel %v, the report %+v", m, g)
			}
		}
		// Hourly volume, against the report's timeline.
		cols, rows = query(d.Panels[2].Title, d.Panels[2].Targets[0].RawSQL)
		if len(rows) != len(rep.Timeline) {
			t.Fatalf("volume panel: %d hours, the report %d", len(rows), len(rep.Timeline))
		}
		for i, r := range rows {
			m := byName(cols, r)
			h := rep.Timeline[i]
			if tm, ok := m["time"].(time.Time); !ok || !tm.Equal(h.Hour) || int(num(m["h2"])) != h.H2 || int(num(m["h3"])) != h.H3 {
				t.Errorf("volume panel row %v, the report's %+v", m, h)
			}
		}

	}
}

// newScanValue is a pointer to a new value of a column's scan type.
func newScanValue(t reflect.Type) any { return reflect.New(t).Interface() }

// deref is the value a newScanValue pointer holds.
func deref(p any) any { return reflect.ValueOf(p).Elem().Interface() }
