package render

import (
	"encoding/json"
	"fmt"

	"github.com/h3rum/h3rum/queries"
)

// The Grafana dashboard for ClickHouse (deploy/grafana/h3rum-clickhouse.json)
// is made from the report's own SQL files, so that it shows the report's
// figures: the like-for-like headline from the rollup plus raw edges,
// batch orders weighed equally, one design at a time. GrafanaDashboard
// binds the files' parameters to the official
// ClickHouse data source's macros and the dashboard's variables;
// TestGrafanaDashboard keeps the committed file equal to it and runs every
// panel's SQL against the report.

// GrafanaDatasource is the plugin id of Grafana's official ClickHouse data
// source.
const GrafanaDatasource = "grafana-clickhouse-datasource"

// Values the dashboard's SQL binds in place of the report's parameters:
// the time range as unix seconds, its whole hours (clipped so that a range
// without one reads raw rows only, as newWindow does), and the variables,
// quoted and escaped by Grafana's sqlstring format.
const (
	grafanaFrom     = "toUInt32($__fromTime)"
	grafanaTo       = "toUInt32($__toTime)"
	grafanaHourFrom = "least(intDiv(toUInt32($__fromTime) + 3599, 3600) * 3600, toUInt32($__toTime))"
	grafanaHourTo   = "greatest(intDiv(toUInt32($__toTime), 3600) * 3600, " + grafanaHourFrom + ")"
	grafanaSite     = "${site:sqlstring}"
	grafanaDesign   = "${design:sqlstring}"
)

// grafanaValues are the values the dashboard's SQL binds in place of the
// report's parameters, by name.
var grafanaValues = map[string]string{
	"since": grafanaFrom, "until": grafanaTo, "hour_from": grafanaHourFrom, "hour_to": grafanaHourTo,
	"edge_a0": grafanaFrom, "edge_a1": grafanaHourFrom, "edge_b0": grafanaHourTo, "edge_b1": grafanaTo,
	"site": grafanaSite, "design": grafanaDesign, "source": "'browser'",
	"include_bots": "0", // bots are left out
}

// grafanaSQL returns the query file name for the dashboard: the report's
// SQL as queries.PanelSQL renders it, every parameter bound to the
// dashboard's macros and variables.
func grafanaSQL(name string) (string, error) {
	return queries.PanelSQL(name, grafanaValues)
}

// grafanaPanel is one panel: its title, description, kind and SQL.
type grafanaPanel struct {
	title, description string
	timeSeries         bool
	sql                string
	w, h               int
}

// GrafanaDashboard returns the dashboard's JSON.
func GrafanaDashboard() ([]byte, error) {
	points, err := grafanaSQL("points_rollup.sql")
	if err != nil {
		return nil, err
	}
	timeline, err := grafanaSQL("timeline_rollup.sql")
	if err != nil {
		return nil, err
	}
	excluded, err := grafanaSQL("excluded.sql")
	if err != nil {
		return nil, err
	}
	designs, err := grafanaSQL("designs.sql")
	if err != nil {
		return nil, err
	}
	designKey, err := queries.PanelSQL("design key", nil)
	if err != nil {
		return nil, err
	}
	// The mean of the two batch orders' quantiles (order.go): avgIf over
	// an outcome's rows of each order.
	pct := func(i int, p string) string {
		return fmt.Sprintf(`round(avgIf(q[%[1]d], oc = 'h2'), 1) AS h2_%[2]s_ms,
       round(avgIf(q[%[1]d], oc = 'h3'), 1) AS h3_%[2]s_ms,
       round(avgIf(q[%[1]d], oc = 'h3') - avgIf(q[%[1]d], oc = 'h2'), 1) AS h3_minus_h2_%[2]s_ms`, i, p)
	}
	panels := []grafanaPanel{
		{
			title: "HTTP/3 − HTTP/2 by region (like for like)",
			description: "Percentiles of warm parallel requests of complete, verified runs (the report's headline): " +
				"each the mean of the h2first and h3first runs' figures; negative means HTTP/3 is faster. Same SQL as `h3rum report` " +
				"(points_rollup.sql); the report adds intervals and flags percentiles too few runs stand behind.",
			sql: "SELECT grp AS region,\n       " + pct(1, "p50") + ",\n       " + pct(3, "p90") + ",\n       " + pct(4, "p95") +
				",\n       sum(n_samples) AS samples\nFROM\n(\n" + points + "\n)\nWHERE grp != '' AND ord != '' AND (oc = 'h2' OR oc = 'h3')\nGROUP BY region\nORDER BY samples DESC, region",
			w: 24, h: 9,
		},
		{
			title: "HTTP/3 availability by region (per run)",
			description: "Of the design's non-bot runs with an H3 batch, the share whose every H3-batch request used h3 " +
				"(a failed request counts against). Same SQL as the report (excluded.sql with excluded_runs_table.sql).",
			sql: "SELECT grp AS region, with_h3 AS runs_with_h3_batch, available AS runs_all_h3,\n       round(available / with_h3, 4) AS h3_availability\nFROM\n(\n" +
				excluded + "\n)\nWHERE with_h3 > 0\nORDER BY with_h3 DESC, region",
			w: 12, h: 9,
		},
		{
			title:       "Volume: headline samples per hour",
			description: "Parallel requests of like-for-like runs per hour and protocol (timeline_rollup.sql).",
			timeSeries:  true,
			sql:         "SELECT h AS time, sumIf(n, oc = 'h2') AS h2, sumIf(n, oc = 'h3') AS h3\nFROM\n(\n" + timeline + "\n)\nGROUP BY time\nORDER BY time",
			w:           12, h: 9,
		},
	}
	ds := map[string]any{"type": GrafanaDatasource, "uid": "${datasource}"}
	var list []any
	x, y := 0, 0
	for i, p := range panels {
		if x+p.w > 24 {
			x, y = 0, y+9
		}
		kind, format := "table", 1
		if p.timeSeries {
			kind, format = "timeseries", 0
		}
		list = append(list, map[string]any{
			"id": i + 1, "type": kind, "title": p.title, "description": p.description, "datasource": ds,
			"gridPos": map[string]int{"x": x, "y": y, "w": p.w, "h": p.h},
			"targets": []any{map[string]any{
				"refId": "A", "datasource": ds, "editorType": "sql", "queryType": kind, "format": format, "rawSql": p.sql,
			}},
		})
		x += p.w
	}
	variable := func(name, label, sql string, all bool) map[string]any {
		v := map[string]any{
			"name": name, "label": label, "type": "query", "datasource": ds, "definition": sql,
			"query": sql, "refresh": 2, "current": map[string]any{}, "options": []any{}, "hide": 0, "regex": "", "sort": 0,
			"includeAll": all,
		}
		if all {
			v["allValue"] = "" // the report's "all sites"
		}
		return v
	}
	d := map[string]any{
		"title":       "h3rum — HTTP/3 vs HTTP/2 (ClickHouse)",
		"uid":         "h3rum-clickhouse",
		"description": "Generated by render.GrafanaDashboard from the report's SQL; do not edit by hand (go test ./queries/render -run TestGrafanaDashboard -update).",
		"tags":        []string{"h3rum"}, "timezone": "utc", "editable": true, "schemaVersion": 39, "version": 1,
		"time": map[string]string{"from": "now-24h", "to": "now"}, "refresh": "",
		"templating": map[string]any{"list": []any{
			map[string]any{"name": "datasource", "label": "ClickHouse", "type": "datasource", "query": GrafanaDatasource,
				"current": map[string]any{}, "hide": 0, "refresh": 1, "regex": "", "options": []any{}},
			variable("site", "site", "SELECT DISTINCT site FROM samples_rollup ORDER BY site", true),
			variable("design", "design (parallel,bytes,warmup,major[,name=value…])",
				"SELECT "+designKey+"\nFROM\n(\n"+
					designs+"\n)", false),
		}},
		"panels": list,
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
