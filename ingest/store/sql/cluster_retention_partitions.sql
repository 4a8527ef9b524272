-- Month partitions (YYYYMM) of the local tables retention applies to in
-- cluster mode, as one replica of every shard holds them. /*CLUSTER*/ is a
-- checked identifier filled in by h3rum. Parameter: the database.
SELECT DISTINCT table, partition
FROM cluster(/*CLUSTER*/, system, parts)
WHERE database = ? AND active AND has(['samples_local', 'samples_rollup_local', 'runs_local', 'runs_by_id_local', 'run_facts_local', 'run_counts_local', 'run_fact_counts_local', 'failure_counts_local', 'itt_rollup_local', 'handshake_rollup_local', 'handshake_requests_local', 'nel_reports_local', 'samples_rollup_5m_local', 'itt_rollup_5m_local', 'run_counts_5m_local', 'run_fact_counts_5m_local', 'failure_counts_5m_local', 'handshake_rollup_5m_local'], table)
ORDER BY table, partition
