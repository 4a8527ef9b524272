-- NEL failures: Network Error Logging reports of failed requests to the two
-- origins, by group, NEL type, phase and protocol, each report weighted by
-- the inverse of the sampling fraction it was sent under: the estimated
-- number of failed requests it stands for. Rows are stored once at ingest,
-- so no FINAL. Binds @min_sampling_fraction, the smallest fraction ingest
-- accepts (nel.go says why).
SELECT
    {{.Group}} AS grp,
    type AS nel_type,
    toString(phase) AS nel_phase,
    toString(protocol) AS proto,
    count() AS n_reports,
    sum(1 / sampling_fraction) AS estimated
FROM nel_reports
WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
  AND type != 'ok'
  AND (@include_bots = 1 OR bot = 0)
  AND sampling_fraction >= @min_sampling_fraction AND sampling_fraction <= 1
  AND {{template "place" .}}
GROUP BY grp, nel_type, nel_phase, proto
ORDER BY estimated DESC, grp, nel_type, nel_phase, proto
