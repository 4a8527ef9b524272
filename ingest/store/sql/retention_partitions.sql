-- Month partitions (YYYYMM) of the tables retention applies to.
SELECT DISTINCT table, partition
FROM system.parts
WHERE database = currentDatabase() AND active AND has(['samples', 'samples_rollup', 'runs', 'runs_by_id', 'run_facts', 'run_counts', 'run_fact_counts', 'failure_counts', 'itt_rollup', 'handshake_rollup', 'handshake_requests', 'nel_reports', 'samples_rollup_5m', 'itt_rollup_5m', 'run_counts_5m', 'run_fact_counts_5m', 'failure_counts_5m', 'handshake_rollup_5m'], table)
ORDER BY table, partition
