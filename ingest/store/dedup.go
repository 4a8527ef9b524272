package store

import (
	"context"
	_ "embed"
	"maps"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"
)

//go:embed sql/existing_runs.sql
var existingRunsSQL string

// existingRunsLocalSQL is existingRunsSQL over a cluster server's own
// samples table.
var existingRunsLocalSQL = overLocal(existingRunsSQL, "samples")

// overLocal returns query, which reads table, reading a cluster server's
// own table_local instead.
func overLocal(query, table string) string {
	return strings.Replace(query, "FROM "+table+"\n", "FROM "+table+"_local\n", 1)
}

// Stored returns the runs among runs that the samples table already holds.
// An insert that may repeat an earlier one — a spool replay after a crash,
// a retry after an error that may have come after the server committed —
// leaves those out, so every run is stored once and the rollup view, which
// sees every inserted block, counts it once.
func Stored(ctx context.Context, conn driver.Conn, runs []*Run) (map[uuid.UUID]bool, error) {
	args := storedArgs(runs)
	if args == nil {
		return map[uuid.UUID]bool{}, nil
	}
	return storedIDs(ctx, conn, "runs", existingRunsSQL, args...)
}

// Stored is store.Stored on cluster c: each shard's samples are read on a
// replica that has caught up with the others (as Complete does). Through
// the Distributed table a replica just restarted can answer without the
// runs its peer stored meanwhile, and the retry would store them twice.
// Without Dial it reads through the Distributed table.
func (c Cluster) Stored(ctx context.Context, conn driver.Conn, runs []*Run) (map[uuid.UUID]bool, error) {
	if c.Name == "" || c.Dial == nil {
		return Stored(ctx, conn, runs)
	}
	args := storedArgs(runs)
	if args == nil {
		return map[uuid.UUID]bool{}, nil
	}
	return c.storedOnShards(ctx, conn, "runs", "samples", existingRunsLocalSQL, args)
}

// storedOnShards is storedIDs on every shard of c, each read on its own
// table (query reads table_local) on a replica that has caught up with the
// others on it: a table sharded by id holds each id on one shard.
func (c Cluster) storedOnShards(ctx context.Context, conn driver.Conn, what, table, query string, args []any) (map[uuid.UUID]bool, error) {
	shards, err := clusterShards(ctx, conn, c.Name)
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID]bool{}
	for _, replicas := range shards {
		err := c.onCaughtUp(ctx, replicas, []string{table}, func(conn driver.Conn) error {
			stored, err := storedIDs(ctx, conn, what, query, args...)
			maps.Copy(out, stored)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// storedArgs returns existing_runs.sql's arguments for runs; nil when no
// run has samples.
func storedArgs(runs []*Run) []any {
	var (
		sites       []string
		ids         []string
		first, last int64
	)
	for _, r := range runs {
		if r.Report == nil || len(r.Report.Samples) == 0 {
			continue
		}
		t := r.Received.UTC().Unix()
		if len(ids) == 0 || t < first {
			first = t
		}
		if len(ids) == 0 || t > last {
			last = t
		}
		if !slices.Contains(sites, r.Report.Site) {
			sites = append(sites, r.Report.Site)
		}
		ids = append(ids, uuid.UUID(r.Report.RunID).String())
	}
	if len(ids) == 0 {
		return nil
	}
	return []any{sites, first, last, ids}
}
