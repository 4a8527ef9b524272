package store

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

var (
	//go:embed sql/retention_partitions.sql
	retentionPartitionsSQL string
	//go:embed sql/drop_partition.sql
	dropPartitionSQL string
	//go:embed sql/cluster_retention_partitions.sql
	clusterRetentionPartitionsSQL string
	//go:embed sql/drop_partition_on_cluster.sql
	dropPartitionOnClusterSQL string
)

// DropExpired drops the month partitions of samples, samples_rollup, runs,
// runs_by_id, run_facts, run_counts, run_fact_counts, failure_counts,
// itt_rollup, handshake_rollup, handshake_requests, nel_reports and the
// hourly tables' five-minute twins that lie entirely before now − retention, and returns them as "table/YYYYMM". A retention of zero
// or less drops nothing. Dropping whole partitions is the retention
// mechanism both ClickHouse 18.16 (no TTL) and current versions support.
func DropExpired(ctx context.Context, conn driver.Conn, retention time.Duration, now time.Time) ([]string, error) {
	return dropExpired(ctx, conn, retention, now, retentionPartitionsSQL, nil, func(table string) string {
		// table is one of the listing's fixed names, never user text.
		return strings.Replace(dropPartitionSQL, "/*TABLE*/", table, 1)
	})
}

// DropExpiredOnCluster is DropExpired in cluster mode: the expired months
// of the local tables, as one replica of every shard lists them, are
// deleted on every server of cluster (by a mutation: see
// sql/drop_partition_on_cluster.sql; the emptied parts then go).
func DropExpiredOnCluster(ctx context.Context, conn driver.Conn, cluster string, retention time.Duration, now time.Time) ([]string, error) {
	db, err := clusterDatabase(ctx, conn, cluster)
	if err != nil {
		return nil, err
	}
	list := strings.ReplaceAll(clusterRetentionPartitionsSQL, "/*CLUSTER*/", cluster)
	return dropExpired(ctx, conn, retention, now, list, []any{db}, func(table string) string {
		col := "time" // samples' and nel_reports', and the per-run tables'
		for _, dt := range derivedTables {
			if dt.Name+"_local" == table {
				col = dt.Time
			}
		}
		return strings.NewReplacer("/*DATABASE*/", db, "/*TABLE*/", table, "/*TIME*/", col, "/*CLUSTER*/", cluster).Replace(dropPartitionOnClusterSQL)
	})
}

// dropExpired lists partitions with list (table, partition rows) and drops
// the expired ones with the statement drop returns for their table.
func dropExpired(ctx context.Context, conn driver.Conn, retention time.Duration, now time.Time, list string, args []any, drop func(table string) string) ([]string, error) {
	if retention <= 0 {
		return nil, nil
	}
	cutoff := now.UTC().Add(-retention)
	// A month partition is entirely expired when it ends before the
	// cutoff, that is when it is before the cutoff's month.
	keepFrom := uint32(cutoff.Year()*100 + int(cutoff.Month()))
	rows, err := conn.Query(ctx, list, args...)
	if err != nil {
		return nil, fmt.Errorf("listing partitions for retention: %w", err)
	}
	type part struct {
		table string
		month uint32
	}
	var expired []part
	for rows.Next() {
		var table, partition string
		if err := rows.Scan(&table, &partition); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing partitions for retention: %w", err)
		}
		m, err := strconv.ParseUint(partition, 10, 32)
		if err != nil {
			continue // not a toYYYYMM partition
		}
		if uint32(m) < keepFrom {
			expired = append(expired, part{table, uint32(m)})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing partitions for retention: %w", err)
	}
	var dropped []string
	for _, pt := range expired {
		if err := conn.Exec(ctx, drop(pt.table), pt.month); err != nil {
			return dropped, fmt.Errorf("dropping partition %d of %s: %w", pt.month, pt.table, err)
		}
		dropped = append(dropped, fmt.Sprintf("%s/%d", pt.table, pt.month))
	}
	return dropped, nil
}
