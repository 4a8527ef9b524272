CREATE MATERIALIZED VIEW IF NOT EXISTS samples_hourly_mv TO samples_hourly AS
SELECT
    toStartOfHour(time) AS hour,
    site,
    continent,
    country,
    want,
    got,
    outcome,
    countState() AS samples,
    uniqHLL12State(run_id) AS runs,
    quantilesTDigestState(0.5, 0.75, 0.9, 0.95, 0.99)(duration_ms) AS duration
FROM samples
WHERE phase = 'parallel' AND error = '' AND bot = 0
GROUP BY hour, site, continent, country, want, got, outcome
