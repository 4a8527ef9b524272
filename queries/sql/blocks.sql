-- The blocks every query file shares. Values are bound by name (@since …,
-- query.Prepare); the blocks choose only among fixed structure.

-- "selection" is the report's selection of raw rows: the window, the site,
-- the widening options, the like-for-like headline (the exclusion bits
-- that count) and the design.
{{- define "selection"}}time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
      AND (@site = '' OR site = @site)
      AND (@include_warmup = 1 OR phase = 'parallel')
      AND (@include_failed = 1 OR error = '')
      AND (@include_bots = 1 OR bot = 0)
      AND (@include_excluded = 1 OR bitAnd(exclusions, @exclusions) = 0)
      AND {{template "design" .}}
{{- end}}

-- "runs selection" is the selection for the runs table (one row per run,
-- its parallel requests as arrays): the window, the site, bots and
-- exclusions; the phase is parallel, and each file leaves failures out of
-- a run's arrays.
{{- define "runs selection"}}time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
      AND (@site = '' OR site = @site)
      AND (@include_bots = 1 OR bot = 0)
      AND (@include_excluded = 1 OR bitAnd(exclusions, @exclusions) = 0)
      AND {{template "design" .}}
{{- end}}

-- "rollup slots" and "edge hours" are every rollup file's selections:
-- the rollup's rows of the window's whole hours, or those of its
-- five-minute twin in the whole five minutes at the window's edges (a
-- query.Rollup's .Fine), and the per-run rows of the minutes left at either
-- end, each of the site.
{{- define "rollup slots"}}{{if .Fine -}}
((hour >= toDateTime(@fine_a0, 'UTC') AND hour < toDateTime(@fine_a1, 'UTC'))
        OR (hour >= toDateTime(@fine_b0, 'UTC') AND hour < toDateTime(@fine_b1, 'UTC')))
{{- else -}}
hour >= toDateTime(@hour_from, 'UTC') AND hour < toDateTime(@hour_to, 'UTC')
{{- end}}
      AND (@site = '' OR site = @site)
{{- end}}
{{- define "edge hours"}}((time >= toDateTime(@edge_a0, 'UTC') AND time < toDateTime(@edge_a1, 'UTC'))
        OR (time >= toDateTime(@edge_b0, 'UTC') AND time < toDateTime(@edge_b1, 'UTC')))
      AND (@site = '' OR site = @site)
{{- end}}

-- "edge requests" makes a row of the runs table its parallel requests,
-- under the samples' column names: a rollup file reads the minutes at its
-- window's edges outside the twins' slots from a row per run instead of a row per sample (a
-- run's time, place, design, batch order and exclusions are its samples',
-- store's runs_mv.sql; the arrays line up). A file filters the runs in
-- PREWHERE and their requests in WHERE: a WHERE beside an ARRAY JOIN is
-- evaluated on the joined rows, every run's columns copied per request.
{{- define "edge requests"}}ARRAY JOIN durations AS duration_ms, outcomes AS outcome, wants AS want, errors AS error{{end}}

-- "design" is the design, who measured (browsers, or the agent) and where
-- ("place filters"). The rollup and runs tables hold browser rows only and
-- say so in an alias column, so the one condition serves every table.
{{- define "design"}}({{template "design columns" .}} AND source = @source{{template "place filters" .}})
{{- end}}

-- "script errors since" is a run of the report's design and of beacon
-- @script_errors_since or later (the run facts' se_ columns).
{{- define "script errors since"}}{{template "design" .}} AND arrayMap(x -> toUInt32OrZero(x), splitByChar('.', beacon_version)) >= @script_errors_since
{{- end}}

-- "design columns" is the design's stored columns alone: a runs file's
-- PREWHERE, as source is an alias there (18.16 cannot find an alias in a
-- PREWHERE that selects no mark).
{{- define "design columns"}}{{if .DesignAll}}1{{else if .DesignKey}}{{template "design key"}} = @design{{else -}}
(param_parallel = @parallel AND param_bytes = @bytes AND param_warmup = @warmup AND beacon_major = @beacon_major AND param_extra = @extra)
{{- end}}
{{- end}}

-- "design key" is a design in ParseDesign's form ("5,0,2,1" or
-- "5,0,2,1,gap=100"), as the designs list and Grafana's variable name it.
{{- define "design key"}}concat(toString(param_parallel), ',', toString(param_bytes), ',', toString(param_warmup), ',', toString(beacon_major), if(param_extra = '', '', concat(',', param_extra)))
{{- end}}

-- "place" is the place alone, for the files that read every design (first
-- contact, the designs, NEL): a condition, (1) for the world.
{{- define "place"}}(1{{template "place filters" .}}){{end}}
{{- define "place filters"}}{{if .Continent}} AND continent = @continent{{end}}{{if .Country}} AND country = @country{{end}}{{end}}

-- "sample range" is the run sample as a range of runs_by_id's key, (site,
-- continent, day, run_id): by continent, each continent the sample names up
-- to its own bound, so that the fetch reads about the runs it keeps,
-- whatever the sizes of the others and the traffic; else every continent up
-- to the largest bound (@bound, queries.boundID), a row's exact test being
-- "run sample". The same ids either way: a bound is the largest id whose
-- last eight bytes are at most the group's number.
{{- define "sample range"}}
{{- if .SampleRanges}}({{range $i := .SampleRanges}}{{if $i}}
           OR {{end}}(continent = @sample_continent_{{$i}} AND run_id <= toUUID(@sample_bound_{{$i}})){{end}})
{{- else}}run_id <= toUUID(@bound){{end}}
{{- end}}

-- "run sample" keeps each group's runs whose id is at most its bound
-- (queries.sampleBound): the id's last eight bytes as a big-endian number,
-- which ClickHouse stores little-endian in bytes 9 to 16 of the UUID.
-- A group not named keeps every run. reinterpretAsString drops trailing
-- zero bytes, the number's high ones, which reading it back restores.
{{- define "run sample"}}reinterpretAsUInt64(substring(reinterpretAsString(run_id), 9, 8))
             <= transform({{.Group}}, CAST(@groups AS Array(String)), CAST(@bounds AS Array(UInt64)), toUInt64(18446744073709551615))
{{- end}}
