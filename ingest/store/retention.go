package store

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

var (
	//go:embed sql/retention_partitions.sql
	retentionPartitionsSQL string
	//go:embed sql/drop_samples_partition.sql
	dropSamplesPartitionSQL string
	//go:embed sql/drop_samples_rollup_partition.sql
	dropRollupPartitionSQL string
	//go:embed sql/drop_nel_partition.sql
	dropNELPartitionSQL string
)

// DropExpired drops the month partitions of samples, samples_rollup and
// nel_reports that lie entirely before now − retention, and returns them as
// "table/YYYYMM". A retention of zero or less drops nothing. Dropping whole
// partitions is the retention mechanism both ClickHouse 18.16 (no TTL) and
// current versions support.
func DropExpired(ctx context.Context, conn driver.Conn, retention time.Duration, now time.Time) ([]string, error) {
	if retention <= 0 {
		return nil, nil
	}
	cutoff := now.UTC().Add(-retention)
	// A month partition is entirely expired when it ends before the
	// cutoff, that is when it is before the cutoff's month.
	keepFrom := uint32(cutoff.Year()*100 + int(cutoff.Month()))
	rows, err := conn.Query(ctx, retentionPartitionsSQL)
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
		q := dropSamplesPartitionSQL
		switch pt.table {
		case "samples_rollup":
			q = dropRollupPartitionSQL
		case "nel_reports":
			q = dropNELPartitionSQL
		}
		if err := conn.Exec(ctx, q, pt.month); err != nil {
			return dropped, fmt.Errorf("dropping partition %d of %s: %w", pt.month, pt.table, err)
		}
		dropped = append(dropped, fmt.Sprintf("%s/%d", pt.table, pt.month))
	}
	return dropped, nil
}
