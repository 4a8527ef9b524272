package store

import (
	"context"
	_ "embed"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"text/template"

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

// MigrateCluster creates or updates the schema on the cluster named
// cluster (a remote_servers entry of the servers' configuration) through
// conn, one of its servers, as Migrate does on one server: the database on
// every server, then the current schema or the cluster migrations with ON
// CLUSTER DDL, recorded in a schema_migrations table every server holds.
// It returns the migrations it applied or recorded. A server that is down
// makes ON CLUSTER wait (distributed_ddl_task_timeout, 180 s by default)
// and fail; run it again once the server is back.
func MigrateCluster(ctx context.Context, conn driver.Conn, cluster string) ([]string, error) {
	db, err := clusterDatabase(ctx, conn, cluster)
	if err != nil {
		return nil, err
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
	return applied, nil
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
