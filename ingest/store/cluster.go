package store

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Cluster mode: the same tables, spread over a ClickHouse cluster. Every
// server holds samples_local and samples_rollup_local, replicated within
// its shard (ReplicatedMergeTree through ZooKeeper or ClickHouse Keeper),
// and the Distributed tables samples and samples_rollup over them — the
// names the single-server schema uses, so ingest and the reports run
// unchanged against any server of the cluster.

//go:embed sql/cluster_schema_migrations.sql
var clusterSchemaMigrationsDDL string

// identifier is what h3rum accepts as a cluster or database name in DDL.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// placeholders is the dialect of cluster mode's SQL with the names left
// unfilled, as /*CLUSTER*/ and /*DATABASE*/.
var placeholders = dialect{Cluster: "/*CLUSTER*/", Database: "/*DATABASE*/"}

// ClusterMigrations returns cluster mode's migrations in version order,
// with the placeholders /*CLUSTER*/ and /*DATABASE*/ in place of the
// cluster's and the database's names.
func ClusterMigrations() ([]Migration, error) {
	t, err := templates()
	if err != nil {
		return nil, err
	}
	return clusterSteps(t, placeholders)
}

// firstSharedStep is the first step written once for both deployments:
// from it on, migrations/ holds cluster mode's steps as well (rendered with
// ON CLUSTER, the _local tables and the Distributed ones), and cluster/
// only the steps of earlier releases, numbered apart.
const firstSharedStep = 48

// clusterSteps returns cluster mode's steps rendered for d: those of
// cluster/, then the shared ones of migrations/.
func clusterSteps(t *template.Template, d dialect) ([]Migration, error) {
	ms, err := steps(t, "cluster", d)
	if err != nil {
		return nil, err
	}
	for i := range ms {
		if ms[i].Version >= firstSharedStep {
			return nil, fmt.Errorf("cluster step %s: from %d on, steps are shared and live in migrations/", ms[i].Name, firstSharedStep)
		}
	}
	shared, err := steps(t, "migrations", d)
	if err != nil {
		return nil, err
	}
	for _, m := range shared {
		if m.Version >= firstSharedStep {
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// CheckClusterName reports whether name can be a cluster name here.
func CheckClusterName(name string) error {
	if !identifier.MatchString(name) {
		return fmt.Errorf("cluster name %q: want letters, digits and _ (as in the servers' remote_servers)", name)
	}
	return nil
}

// clusterDatabase checks the cluster name and returns conn's current
// database, both of which cluster mode puts into DDL text.
func clusterDatabase(ctx context.Context, conn driver.Conn, cluster string) (string, error) {
	if err := CheckClusterName(cluster); err != nil {
		return "", err
	}
	var db string
	if err := conn.QueryRow(ctx, "SELECT currentDatabase()").Scan(&db); err != nil {
		return "", fmt.Errorf("reading the current database: %w", err)
	}
	if !identifier.MatchString(db) {
		return "", fmt.Errorf("database %q: cluster mode wants letters, digits and _", db)
	}
	return db, nil
}

// MigrateCluster creates or updates the schema on cluster c (its Name a
// remote_servers entry of the servers' configuration) through conn, one
// of its servers, as Migrate does on one server: the database on every
// server, then the current schema or the cluster migrations with ON
// CLUSTER DDL, recorded in a schema_migrations table every server holds.
// It returns once every server has settled (see settle), so that a load
// started next finds the same schema and data on every replica; it reaches
// them with c.Dial, which it needs. It returns the migrations it applied
// or recorded. A server that is down makes ON CLUSTER wait
// (distributed_ddl_task_timeout, 180 s by default) and fail; run it again
// once the server is back.
func MigrateCluster(ctx context.Context, conn driver.Conn, c Cluster) ([]string, error) {
	cluster := c.Name
	db, err := clusterDatabase(ctx, conn, cluster)
	if err != nil {
		return nil, err
	}
	if c.Dial == nil {
		return nil, fmt.Errorf("migrating cluster %s: no way to reach its servers (Dial)", cluster)
	}
	if err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE IF NOT EXISTS %s ON CLUSTER %s", db, cluster)); err != nil {
		return nil, fmt.Errorf("creating database %s on cluster %s: %w", db, cluster, err)
	}
	t, err := templates()
	if err != nil {
		return nil, err
	}
	d := dialect{Cluster: cluster, Database: db}
	ms, err := clusterSteps(t, d)
	if err != nil {
		return nil, err
	}
	for i := range ms {
		ms[i].Name = "cluster/" + ms[i].Name
	}
	schema, err := currentSchema(t, d)
	if err != nil {
		return nil, err
	}
	fill := strings.NewReplacer(placeholders.Cluster, cluster, placeholders.Database, db)
	applied, err := apply(ctx, conn, fill.Replace(clusterSchemaMigrationsDDL), schema, ms)
	if err != nil {
		return applied, fmt.Errorf("on cluster %s: %w", cluster, err)
	}
	if err := c.settle(ctx, conn); err != nil {
		return applied, fmt.Errorf("on cluster %s: %w", cluster, err)
	}
	return applied, nil
}

// settle waits until every server of c has done what the ON CLUSTER DDL
// it was sent left to do in the background. Such DDL returns once every
// server has run its queue entry, but a replicated table's ALTER runs on
// one replica of a shard and reaches the other through ZooKeeper, a
// mutation is applied by each replica in the background, and a copy's
// parts are fetched by the other replicas. So a server has settled when
// its tables have the columns conn's server has, it has no mutation left
// to do, and each of its replicated tables has caught up (caughtUp). It
// waits as long as ON CLUSTER DDL waits for a server
// (distributed_ddl_task_timeout), or until ctx ends.
func (c Cluster) settle(ctx context.Context, conn driver.Conn) error {
	var wait string
	if err := conn.QueryRow(ctx, "SELECT value FROM system.settings WHERE name = 'distributed_ddl_task_timeout'").Scan(&wait); err != nil {
		return fmt.Errorf("reading distributed_ddl_task_timeout: %w", err)
	}
	if s, err := strconv.Atoi(wait); err == nil && s > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(s)*time.Second)
		defer cancel()
	}
	want, err := columnsOf(ctx, conn)
	if err != nil {
		return err
	}
	shards, err := clusterShards(ctx, conn, c.Name)
	if err != nil {
		return err
	}
	for _, replicas := range shards {
		for _, addr := range replicas {
			for {
				err := c.settled(ctx, addr, want)
				if err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("server %s has not settled after the migration: %w (%w)", addr, err, context.Cause(ctx))
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	}
	return nil
}

// settled reports (nil) whether the server at addr has settled, its
// tables' columns being want.
func (c Cluster) settled(ctx context.Context, addr, want string) error {
	conn, err := c.Dial(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	got, err := columnsOf(ctx, conn)
	if err != nil {
		return err
	}
	if got != want {
		return errors.New("its tables' columns differ from the migrating server's: an ALTER is not applied yet")
	}
	var mutations uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND NOT is_done").Scan(&mutations); err != nil {
		return fmt.Errorf("reading mutations: %w", err)
	}
	if mutations > 0 {
		return fmt.Errorf("%d mutations not done", mutations)
	}
	replicated, err := tableCounts(ctx, conn, "SELECT table, toUInt64(0) FROM system.replicas WHERE database = currentDatabase()")
	if err != nil {
		return err
	}
	return replicasCaughtUp(ctx, conn, slices.Sorted(maps.Keys(replicated)))
}

// columnsOf returns the columns of every table of conn's database, one
// text to compare.
func columnsOf(ctx context.Context, conn driver.Conn) (string, error) {
	var cols []string
	if err := conn.QueryRow(ctx, `SELECT groupArray(c) FROM (SELECT concat(table, '.', name, ' ', type) AS c
		FROM system.columns WHERE database = currentDatabase() ORDER BY table, name)`).Scan(&cols); err != nil {
		return "", fmt.Errorf("reading the tables' columns: %w", err)
	}
	return strings.Join(cols, "\n"), nil
}

// ClusterDSN returns dsn with the settings cluster mode writes with:
// insert_distributed_sync=1, so that an insert into the Distributed table
// returns once every shard has stored its rows — the spool drops reports
// only then. Settings already in dsn are kept (add insert_quorum=2 there
// to wait for two replicas of each shard as well).
func ClusterDSN(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("parsing ClickHouse DSN: %w", err)
	}
	q := u.Query()
	if q.Get("insert_distributed_sync") == "" {
		q.Set("insert_distributed_sync", "1")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}
