{{- /* How the collector checks and completes a table derived from samples
(store.derivedTables). Each template is rendered with a derivedQuery: the
table's name as reports read it (.Table), its time column (.Time: hour or
time), the summable measure that counts what a block adds to it
(.Measure), its view's SELECT over some of samples' rows (.Fill) and for
an insert its columns (.Columns). Values are bound by name: @sites, @from
and @to (unix seconds: an hour's bounds, or a window's), @ids (run ids as
canonical UUID text). */ -}}

{{define "samples of hours"}}(SELECT * FROM {{.Samples}} WHERE has(@sites, site) AND time >= toDateTime(@from, 'UTC') AND time < toDateTime(@to, 'UTC')){{end}}

{{define "samples of runs"}}(SELECT * FROM {{.Samples}} WHERE has(@sites, site) AND time >= toDateTime(@from, 'UTC') AND time < toDateTime(@to, 'UTC') AND toString(run_id) IN (SELECT arrayJoin(@ids))){{end}}

{{define "samples of window"}}(SELECT * FROM {{.Samples}} WHERE time >= toDateTime(@from, 'UTC') AND time < toDateTime(@to, 'UTC')){{end}}

{{- /* An hourly table's measure over the block's hour and sites, that of
its fill over samples' rows there, and that of its fill over the block's
runs alone (.Fill is the latter; .Hours the former). */}}
{{define "hourly state"}}SELECT
    (SELECT {{.Measure}} FROM {{.Table}} WHERE has(@sites, site) AND {{.Time}} >= toDateTime(@from, 'UTC') AND {{.Time}} < toDateTime(@to, 'UTC')),
    (SELECT {{.Measure}} FROM ({{.Hours}})),
    (SELECT {{.Measure}} FROM ({{.Fill}})){{end}}

{{- /* The runs of the block that a per-run table lacks: counted, then
inserted. Run by run, the completion is idempotent. */}}
{{define "lacking"}}WHERE toString(run_id) NOT IN (
    SELECT toString(run_id) FROM {{.Table}}
    WHERE has(@sites, site) AND time >= toDateTime(@from, 'UTC') AND time < toDateTime(@to, 'UTC')
      AND toString(run_id) IN (SELECT arrayJoin(@ids))){{end}}

{{define "runs state"}}SELECT count() FROM ({{.Fill}})
{{template "lacking" .}}{{end}}

{{define "complete runs"}}INSERT INTO {{.Table}} ({{.Columns}})
SELECT {{.Columns}} FROM ({{.Fill}})
{{template "lacking" .}}{{end}}

{{define "complete block"}}INSERT INTO {{.Table}} ({{.Columns}})
SELECT {{.Columns}} FROM ({{.Fill}}){{end}}

{{- /* Check's two sides: the table's measure by hour, and its fill's over
samples' rows of the window. */}}
{{define "by hour present"}}SELECT toUInt32(toStartOfHour({{.Time}})) AS h, {{.Measure}} FROM {{.Table}}
WHERE {{.Time}} >= toDateTime(@from, 'UTC') AND {{.Time}} < toDateTime(@to, 'UTC')
GROUP BY h{{end}}

{{define "by hour filled"}}SELECT toUInt32(toStartOfHour({{.Time}})) AS h, {{.Measure}} FROM ({{.Fill}})
GROUP BY h{{end}}

{{- /* Repair's statements for one hour of a table (@from and @to its
bounds; .Fill the table's fill over samples' rows of the hour). A per-run
table gets the hour's runs it lacks, counted and then inserted, so that
running it again adds nothing. An hourly table is emptied of the hour by a
mutation ("clear hour"), asynchronous on 18.16, so Repair waits until
"mutations pending" is 0 (@table: the table's name), and then filled with
"complete block". */}}
{{define "lacking in window"}}WHERE toString(run_id) NOT IN (
    SELECT toString(run_id) FROM {{.Table}}
    WHERE time >= toDateTime(@from, 'UTC') AND time < toDateTime(@to, 'UTC')){{end}}

{{define "runs lacking in window"}}SELECT count() FROM ({{.Fill}})
{{template "lacking in window" .}}{{end}}

{{define "repair runs"}}INSERT INTO {{.Table}} ({{.Columns}})
SELECT {{.Columns}} FROM ({{.Fill}})
{{template "lacking in window" .}}{{end}}

{{define "clear hour"}}ALTER TABLE {{.Table}} DELETE WHERE {{.Time}} >= toDateTime(@from, 'UTC') AND {{.Time}} < toDateTime(@to, 'UTC'){{end}}

{{define "mutations pending"}}SELECT count() FROM system.mutations
WHERE database = currentDatabase() AND table = @table AND is_done = 0{{end}}
