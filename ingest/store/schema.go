package store

import (
	"embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store/sqltext"
)

// The schema is written once for both deployments: schema/ holds the
// current definition of every table and view, which a new database is
// created from; migrations/ and cluster/ hold the numbered steps that bring
// an earlier release's database to it. All are text/template files
// rendered for one server or for a cluster (a dialect), as Plausible
// writes its tables once with an ON CLUSTER placeholder. A step may use a
// current definition ({{template "schema/runs_mv.sql" .}}) where that is
// what it creates; TestReleasedStepsUnchanged keeps every step as it was
// released.

//go:embed schema/*.sql migrations/*.sql cluster/*.sql check/*.sql
var schemaFS embed.FS

// schemaOrder is the order in which a new database creates the current
// schema's files: a view after the tables it reads and writes. (The other
// files, distributed.sql and hourly.sql, are the tables' Distributed
// table in cluster mode and what the hourly tables share.)
var schemaOrder = []string{"samples", "samples_rollup", "samples_rollup_mv", "nel_reports", "runs", "runs_mv", "runs_by_id", "runs_by_id_mv", "run_facts", "run_facts_mv", "run_counts", "run_counts_mv", "run_fact_counts", "run_fact_counts_mv", "failure_counts", "failure_counts_mv", "itt_rollup", "itt_rollup_mv", "handshake_rollup", "handshake_rollup_mv", "handshake_requests", "handshake_requests_mv"}

// dialect is what the schema's templates are rendered for: one server
// (the zero value) or the cluster named Cluster, whose every server holds
// the rows of its shard in T_local tables, replicated within the shard,
// under Distributed tables T over them. Cluster and Database are checked
// identifiers (or the placeholders /*CLUSTER*/ and /*DATABASE*/).
type dialect struct {
	Cluster  string
	Database string
	// Step is the version of the migration step being rendered, 0 for the
	// current schema: a schema/ file that a released step renders keeps
	// the text it had then (Since).
	Step int
	// Fine renders an hourly table's file (and its view's) as its
	// five-minute twin (fiveMinuteTables).
	Fine bool
}

// fiveMinuteTables are the hourly tables that have a five-minute twin,
// T_5m (FiveMinuteTwin) filled by T_5m_mv: the same rows by five minutes instead of by hour
// (its hour column holds the five minutes' start). A report reads the
// whole hours of its window from T and the whole five minutes at its edges
// from the twin, so that only the minutes before the first five-minute
// boundary, at most five, come from per-run rows.
var fiveMinuteTables = []string{"samples_rollup", "itt_rollup", "run_counts", "run_fact_counts", "failure_counts", "handshake_rollup"}

// FiveMinutes is d rendering the five-minute twins: what a step renders
// an hourly table's files with to make its twin.
func (d dialect) FiveMinutes() dialect { d.Fine = true; return d }

// FiveMinuteTwin is the name of the hourly table's five-minute twin.
func FiveMinuteTwin(table string) string { return table + "_5m" }

// Rollup is the hourly table's name, or its twin's where d renders the
// twins.
func (d dialect) Rollup(table string) string {
	if d.Fine {
		return FiveMinuteTwin(table)
	}
	return table
}

// Granularity is an hourly table's index granularity: a twin's edge reads
// a few of its slots, which a coarse granule would read with thousands of
// others' states, as ClickHouse reads whole granules.
func (d dialect) Granularity() int {
	if d.Fine {
		return 256
	}
	return 8192
}

// Slot is the start of the hour of the time column col, or of its five
// minutes where d renders the twins.
func (d dialect) Slot(col string) string {
	if d.Fine {
		return "toStartOfFiveMinute(" + col + ")"
	}
	return "toStartOfHour(" + col + ")"
}

// Since reports whether what the step of version v added to the schema
// belongs in what is rendered: always in the current schema, and in the
// steps from v on. (cluster/'s steps, numbered apart, all come before
// firstSharedStep and so before any v that uses this.)
func (d dialect) Since(v int) bool { return d.Step == 0 || d.Step >= v }

// OnCluster is the ON CLUSTER clause of DDL, "" on one server.
func (d dialect) OnCluster() string {
	if d.Cluster == "" {
		return ""
	}
	return " ON CLUSTER " + d.Cluster
}

// Name is the name statements use for table as reports read it: in
// cluster mode the Distributed table (or a view) of the database.
func (d dialect) Name(table string) string {
	if d.Cluster == "" {
		return table
	}
	return d.Database + "." + table
}

// Local is the name of the table holding table's rows on this server: in
// cluster mode the shard's table under the Distributed one.
func (d dialect) Local(table string) string {
	if d.Cluster == "" {
		return table
	}
	return d.Database + "." + table + "_local"
}

// Engine is the engine of table, a MergeTree family engine (as
// "ReplacingMergeTree"): in cluster mode its replicated form, with one
// ZooKeeper path a shard ({shard} and {replica} are the servers' macros).
func (d dialect) Engine(engine, table string) string {
	if d.Cluster == "" {
		return engine
	}
	return fmt.Sprintf("Replicated%s('/clickhouse/tables/{shard}/%s/%s_local', '{replica}')", engine, d.Database, table)
}

// Distributed is the engine of cluster mode's Distributed table over
// table's local ones, sharded by key (none: "").
func (d dialect) Distributed(table, key string) string {
	args := []string{d.Cluster, d.Database, table + "_local"}
	if key != "" {
		args = append(args, key)
	}
	return "Distributed(" + strings.Join(args, ", ") + ")"
}

// sharded is a dialect with one Distributed table's Table and sharding
// Key, for schema/distributed.sql.
type sharded struct {
	dialect
	Table, Key string
}

// Over returns d for the Distributed table over table's local ones,
// sharded by key (none: "").
func (d dialect) Over(table, key string) sharded { return sharded{d, table, key} }

// reading is a dialect with the table a SELECT reads From, for a
// definition shared by a view and a migration's copy (schema/
// run_facts_mv.sql's "run facts from").
type reading struct {
	dialect
	From string
}

// Reading returns d for a SELECT from table (a name as Name or Local
// gives it).
func (d dialect) Reading(table string) reading { return reading{d, table} }

// hourly is a dialect with one hourly table's engine Kind, Table and
// sorting key Order, for schema/hourly.sql's "hourly table".
type hourly struct {
	dialect
	Kind, Table, Order string
}

// Hourly returns d for the end of table, an hourly table of engine kind
// sorted by order.
func (d dialect) Hourly(kind, table, order string) hourly { return hourly{d, kind, table, order} }

// RequestTimeoutMS is how long the script waits for a probe request
// (beacon.RequestTimeoutMS): the rollup counts a failed request at it. A
// change to it changes samples_rollup_mv, which then needs a migration.
func (dialect) RequestTimeoutMS() int { return beacon.RequestTimeoutMS }

// BotBit is the exclusion bit of a bot's run (ExcludeBot), which
// itt_rollup keeps as its bot column.
func (dialect) BotBit() int { return int(ExcludeBot) }

// RunFlag is the bit of the run flag name (RunFlags) in samples.run_flags.
func (dialect) RunFlag(name string) (int, error) {
	f, ok := runFlagNames[name]
	if !ok {
		return 0, fmt.Errorf("no run flag %q", name)
	}
	return int(f), nil
}

// templates parses every schema file, each named by its path
// ("schema/samples.sql", "migrations/0001_samples.sql").
func templates() (*template.Template, error) {
	return sqltext.Parse(schemaFS, "schema/*.sql", "migrations/*.sql", "cluster/*.sql", "check/*.sql")
}

// render executes the template name for d.
func render(t *template.Template, name string, d dialect) (string, error) {
	return sqltext.Render(t, name, d)
}

// currentSchema returns the statements that create the current schema
// for d, in order.
func currentSchema(t *template.Template, d dialect) ([]string, error) {
	var out []string
	for _, name := range schemaOrder {
		sql, err := render(t, "schema/"+name+".sql", d)
		if err != nil {
			return nil, err
		}
		out = append(out, statements(sql)...)
	}
	for _, table := range fiveMinuteTables {
		for _, name := range []string{table, table + "_mv"} {
			sql, err := render(t, "schema/"+name+".sql", d.FiveMinutes())
			if err != nil {
				return nil, err
			}
			out = append(out, statements(sql)...)
		}
	}
	return out, nil
}

// statements splits sql into its statements: separated by a ";" at the
// end of a line, each holding more than comments.
func statements(sql string) []string {
	var out []string
	for _, st := range strings.Split(sql, ";\n") {
		if st = strings.TrimSpace(st); hasSQL(st) {
			out = append(out, st)
		}
	}
	return out
}

// hasSQL reports whether st holds anything but comments and white space.
func hasSQL(st string) bool {
	for _, line := range strings.Split(st, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "--") {
			return true
		}
	}
	return false
}
