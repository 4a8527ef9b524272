-- Intention to treat: every parallel request of the design's non-bot runs,
-- whatever their other exclusions, by the origin it was sent to rather than
-- the protocol it got. A failed or timed-out request counts at the script's
-- request timeout, so failures weigh on the tail as they weigh on users.
SELECT
    {{.Group}} AS grp,
    toString(want) AS sent_to,
    uniq(run_id) AS n_runs,
    count() AS n_samples,
    countIf(error != '') AS n_failed,
    uniqIf(run_id, error != '') AS n_failed_runs,
    quantilesTDigest({{.Levels}})(if(error = '', duration_ms, toFloat32({{.TimeoutMS}}))) AS q
FROM samples
WHERE time >= toDateTime(@since, 'UTC') AND time < toDateTime(@until, 'UTC')
  AND (@site = '' OR site = @site)
  AND phase = 'parallel' AND (want = 'h2' OR want = 'h3')
  AND bitAnd(exclusions, {{.BotBit}}) = 0
  AND {{template "design" .}}
GROUP BY grp, sent_to
ORDER BY grp, sent_to
