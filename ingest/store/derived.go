package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"
)

// ClickHouse writes an inserted block into samples and then pushes it
// through each materialized view in turn, so a server that dies in between
// keeps the samples and only some of the derived tables' rows. The
// collector therefore treats every insert whose outcome it did not see as
// in doubt, and completes each derived table from samples before it
// inserts anything else (Complete). A per-run table is completed run by
// run. A table without run ids (the hourly ones, and handshake_requests,
// a row per request) cannot say which runs it holds, so its total measure
// over the block's hours and sites decides: it holds the block if
// it matches samples, it lacks exactly the block if adding the block's
// part makes it match, and anything else is left alone and reported
// (Unresolved), never guessed.

// derivedTable is a table that a materialized view fills from samples.
type derivedTable struct {
	Name string // the table as its schema file names it
	Fill string // the template of its view's SELECT, over .Reading's From
	// Time is its time column: hour for an hourly table, time for the
	// others.
	Time string
	// Measure sums what a block adds to the table, over the table and over
	// its fill alike (completed by hour, as an hourly table is); "" for a
	// per-run table, completed by run id.
	Measure string
	// Fine is whether it is an hourly table's five-minute twin, filled
	// by its view's SELECT rendered for the twins.
	Fine bool
}

// derivedTables are every table a view fills from samples (TestDerivedTablesAreTheViews),
// the five-minute twins last.
var derivedTables = withFiveMinutes([]derivedTable{
	{Name: "runs", Fill: "runs from", Time: "time", Measure: ""},
	{Name: "runs_by_id", Fill: "runs from", Time: "time", Measure: ""},
	{Name: "run_facts", Fill: "run facts from", Time: "time", Measure: ""},
	{Name: "samples_rollup", Fill: "samples rollup from", Time: "hour", Measure: "countMerge(samples)"},
	{Name: "run_counts", Fill: "run counts from", Time: "hour", Measure: "sum(runs)"},
	{Name: "run_fact_counts", Fill: "run fact counts from", Time: "hour", Measure: "sum(runs)"},
	{Name: "failure_counts", Fill: "failure counts from", Time: "hour", Measure: "sum(failures)"},
	{Name: "itt_rollup", Fill: "itt rollup from", Time: "hour", Measure: "countMerge(samples)"},
	{Name: "handshake_rollup", Fill: "handshake rollup from", Time: "hour", Measure: "countMerge(samples)"},
	{Name: "handshake_requests", Fill: "handshake requests from", Time: "time", Measure: "count()"},
})

// withFiveMinutes appends to tables the five-minute twin of each of
// fiveMinuteTables, completed as its hourly table is.
func withFiveMinutes(tables []derivedTable) []derivedTable {
	for _, name := range fiveMinuteTables {
		i := slices.IndexFunc(tables, func(t derivedTable) bool { return t.Name == name })
		twin := tables[i]
		twin.Name, twin.Fine = FiveMinuteTwin(name), true
		tables = append(tables, twin)
	}
	return tables
}

// DerivedTables returns the names of the tables filled from samples, in
// the order Complete and Check visit them.
func DerivedTables() []string {
	out := make([]string, len(derivedTables))
	for i, t := range derivedTables {
		out[i] = t.Name
	}
	return out
}

// Block is the runs of one insert, as Complete needs them.
type Block []BlockRun

// BlockRun is one run of a Block: its id, site and receive time, which
// place its rows in samples' sort key.
type BlockRun struct {
	ID       uuid.UUID `json:"id"`
	Site     string    `json:"site"`
	Received time.Time `json:"received"`
}

// BlockOf returns the block of runs (those with samples).
func BlockOf(runs []*Run) Block {
	var b Block
	for _, r := range runs {
		if r.Report == nil || len(r.Report.Samples) == 0 {
			continue
		}
		b = append(b, BlockRun{ID: uuid.UUID(r.Report.RunID), Site: r.Report.Site, Received: r.Received.UTC()})
	}
	return b
}

// hours returns the named parameters of b's runs, one set an hour they
// were received in.
func (b Block) hours() [][]any {
	type hour struct{ sites, ids []string }
	at := map[time.Time]*hour{}
	var order []time.Time
	for _, r := range b {
		h := r.Received.UTC().Truncate(time.Hour)
		x, ok := at[h]
		if !ok {
			x = &hour{}
			at[h] = x
			order = append(order, h)
		}
		x.ids = append(x.ids, r.ID.String())
		if !slices.Contains(x.sites, r.Site) {
			x.sites = append(x.sites, r.Site)
		}
	}
	out := make([][]any, len(order))
	for i, h := range order {
		out[i] = []any{
			clickhouse.Named("sites", at[h].sites),
			clickhouse.Named("ids", at[h].ids),
			clickhouse.Named("from", h.Unix()),
			clickhouse.Named("to", h.Add(time.Hour).Unix()),
		}
	}
	return out
}

// Completion is what Complete did to one derived table.
type Completion struct {
	Table string
	// Completed is the runs (a per-run table) or hours (an hourly table)
	// it added to the table.
	Completed int
	// Unresolved is the hours whose measure matched neither the table with
	// the block nor the table without it: another writer's insert in
	// flight, or a hole that is not this block's. They are left as they
	// are; Check shows them.
	Unresolved int
}

// Cluster is what Complete needs of cluster mode: the cluster's name, as
// the servers' remote_servers name it, and a way to reach each of its
// servers (DB.DialServer). The zero Cluster is one server.
type Cluster struct {
	Name string
	Dial func(ctx context.Context, addr string) (driver.Conn, error)
}

// Complete makes every derived table hold the runs of block that samples
// holds, exactly once: block is an insert whose outcome is in doubt (an
// error, a timeout, a lost connection, a process that stopped), and no
// other insert of this writer may have come after it. It is idempotent: a
// Complete that fails, or whose own outcome is in doubt, is run again.
//
// On a cluster each shard's views run on the replica that took its part
// of the insert, so each shard is completed apart, on its own tables: on
// a replica that has first fetched everything the other wrote (caughtUp),
// since a replica behind reads exactly like a hole. A shard none of whose
// replicas catches up in time is an error, so that the block stays in
// doubt and is completed once one has; a Cluster without Dial is only
// looked at, through the Distributed tables: its differences are
// Unresolved.
func Complete(ctx context.Context, conn driver.Conn, cluster Cluster, block Block) ([]Completion, error) {
	if cluster.Name == "" {
		return completeOn(completing(ctx, false), conn, derivedQueries, block, true)
	}
	if cluster.Dial == nil {
		return completeOn(completing(ctx, false), conn, derivedQueries, block, false)
	}
	shards, err := clusterShards(ctx, conn, cluster.Name)
	if err != nil {
		return nil, err
	}
	out := make([]Completion, len(derivedTables))
	for _, replicas := range shards {
		var done []Completion
		err := cluster.onCaughtUp(ctx, replicas, append([]string{"samples"}, DerivedTables()...), func(conn driver.Conn) error {
			var err error
			done, err = completeOn(completing(ctx, true), conn, localDerivedQueries, block, true)
			return err
		})
		for i, c := range done {
			out[i].Table = c.Table
			out[i].Completed += c.Completed
			out[i].Unresolved += c.Unresolved
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// syncTimeout bounds how long Complete waits for a replica to fetch what
// the other replicas of its shard wrote.
const syncTimeout = 10 * time.Second

// onCaughtUp runs f on the first of a shard's replicas (host:port
// addresses) that can be reached and has caught up with the others on
// tables (their _local tables).
func (c Cluster) onCaughtUp(ctx context.Context, replicas []string, tables []string, f func(conn driver.Conn) error) error {
	var errs []error
	for _, addr := range replicas {
		conn, err := c.Dial(ctx, addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		err = caughtUp(ctx, conn, tables)
		if err == nil {
			err = f(conn)
			conn.Close()
			return err
		}
		conn.Close()
		errs = append(errs, fmt.Errorf("replica %s: %w", addr, err))
	}
	return fmt.Errorf("no replica of a shard of cluster %s has caught up: %w", c.Name, errors.Join(errs...))
}

// completionQuerySize bounds the text of a completion's statements
// (max_query_size, 256 KiB by default): they bind an hour's run ids of the
// block up to twice, and a block of 20 000 sample rows has up to 20 000
// runs, 39 bytes each as text: 1.6 MB.
const completionQuerySize = 16 << 20

// completing is ctx for a completion's statements: with room for their
// text and, on a cluster, without insert deduplication (noDedup says why).
func completing(ctx context.Context, cluster bool) context.Context {
	s := clickhouse.Settings{"max_query_size": completionQuerySize}
	if cluster {
		s["insert_deduplicate"] = 0
	}
	return clickhouse.Context(ctx, clickhouse.WithSettings(s))
}

// noDedup turns off insert deduplication for what is inserted with ctx. A
// replicated table drops a block equal to one of its last 100, even one a
// repair has since deleted: a completion or rebuild inserts what the
// table was checked to lack, and must not be dropped.
func noDedup(ctx context.Context) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_deduplicate": 0}))
}

// caughtUp waits until conn's server has fetched every part the other
// replicas of its shard had written into tables when it was called. SYSTEM
// SYNC REPLICA alone does not say so on 18.16: a replica restarted after a
// kill cannot activate until its earlier ZooKeeper session expires (up to
// 30 s), and until then pulls nothing from the shard's log, so its queue
// is empty and SYNC REPLICA returns at once. So the replicas' state
// decides: every entry the log held at the start pulled (log_pointer past
// that log_max_index), and no part created by then left to fetch. Parts
// other writers add meanwhile are not waited for.
func caughtUp(ctx context.Context, conn driver.Conn, tables []string) error {
	locals := make([]string, len(tables))
	for i, t := range tables {
		locals[i] = t + "_local"
	}
	return replicasCaughtUp(ctx, conn, locals)
}

// replicasCaughtUp is caughtUp on replicated tables locals, named as the
// server names them.
func replicasCaughtUp(ctx context.Context, conn driver.Conn, locals []string) error {
	tablesArg := clickhouse.Named("tables", locals)
	var start time.Time
	if err := conn.QueryRow(ctx, "SELECT now()").Scan(&start); err != nil {
		return fmt.Errorf("reading the replicas' state: %w", err)
	}
	logEnd, err := tableCounts(ctx, conn, "SELECT table, log_max_index FROM system.replicas WHERE database = currentDatabase() AND has(@tables, table)", tablesArg)
	if err != nil {
		return err
	}
	// The client's deadline bounds the wait too: on 18.16 SYNC REPLICA on
	// a replica whose fetches are stopped or failing waits past
	// receive_timeout.
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	sctx = clickhouse.Context(sctx, clickhouse.WithSettings(clickhouse.Settings{"receive_timeout": int(syncTimeout / time.Second)}))
	for _, t := range locals {
		if err := conn.Exec(sctx, "SYSTEM SYNC REPLICA "+t); err != nil {
			return fmt.Errorf("syncing %s: %w", t, err)
		}
	}
	pulled, err := tableCounts(ctx, conn, `SELECT table, log_pointer FROM system.replicas
		WHERE database = currentDatabase() AND has(@tables, table) AND NOT is_readonly AND NOT is_session_expired`, tablesArg)
	if err != nil {
		return err
	}
	fetching, err := tableCounts(ctx, conn, `SELECT table, count() FROM system.replication_queue
		WHERE database = currentDatabase() AND has(@tables, table) AND type = 'GET_PART' AND create_time <= toDateTime(@start)
		GROUP BY table`, tablesArg, clickhouse.Named("start", start.Unix()))
	if err != nil {
		return err
	}
	var behind []string
	for _, t := range locals {
		end, ok := logEnd[t]
		p, active := pulled[t]
		if !ok || !active || !(p > end || p == 0 && end == 0) || fetching[t] > 0 {
			behind = append(behind, t)
		}
	}
	if len(behind) > 0 {
		return fmt.Errorf("%s not caught up: the replica is not active yet, or still has parts to fetch", strings.Join(behind, ", "))
	}
	return nil
}

// tableCounts returns query's rows, a table name and a number each.
func tableCounts(ctx context.Context, conn driver.Conn, query string, args ...any) (map[string]uint64, error) {
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading the replicas' state: %w", err)
	}
	defer rows.Close()
	out := map[string]uint64{}
	for rows.Next() {
		var t string
		var n uint64
		if err := rows.Scan(&t, &n); err != nil {
			return nil, fmt.Errorf("reading the replicas' state: %w", err)
		}
		out[t] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the replicas' state: %w", err)
	}
	return out, nil
}

// CaughtUp reports (nil) whether conn's server, a replica of a cluster,
// holds every part the other replicas of its shard wrote into samples and
// the derived tables, as Complete requires of the replica it completes a
// shard on.
func CaughtUp(ctx context.Context, conn driver.Conn) error {
	return caughtUp(ctx, conn, append([]string{"samples"}, DerivedTables()...))
}

// clusterShards returns the addresses of each shard's replicas, shards
// and replicas in the cluster's order.
func clusterShards(ctx context.Context, conn driver.Conn, cluster string) ([][]string, error) {
	rows, err := conn.Query(ctx, "SELECT shard_num, host_address, port FROM system.clusters WHERE cluster = @cluster ORDER BY shard_num, replica_num",
		clickhouse.Named("cluster", cluster))
	if err != nil {
		return nil, fmt.Errorf("listing the shards of cluster %s: %w", cluster, err)
	}
	defer rows.Close()
	var out [][]string
	last := uint32(0)
	for rows.Next() {
		var shard uint32
		var host string
		var port uint16
		if err := rows.Scan(&shard, &host, &port); err != nil {
			return nil, fmt.Errorf("listing the shards of cluster %s: %w", cluster, err)
		}
		if shard != last || len(out) == 0 {
			out = append(out, nil)
			last = shard
		}
		out[len(out)-1] = append(out[len(out)-1], net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the shards of cluster %s: %w", cluster, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("listing the shards of cluster %s: the server knows no such cluster", cluster)
	}
	return out, nil
}

// completeOn is Complete on one server's tables, as queries names them;
// with repair false it only looks.
func completeOn(ctx context.Context, conn driver.Conn, queries func() (*derivedSQL, error), block Block, repair bool) ([]Completion, error) {
	q, err := queries()
	if err != nil {
		return nil, err
	}
	hours := block.hours()
	out := make([]Completion, len(derivedTables))
	for ti, t := range derivedTables {
		out[ti].Table = t.Name
		for _, args := range hours {
			if t.Measure == "" {
				var lacking uint64
				if err := conn.QueryRow(ctx, q.state[ti], args...).Scan(&lacking); err != nil {
					return out, fmt.Errorf("completing %s: %w", t.Name, err)
				}
				if lacking == 0 {
					continue
				}
				if !repair {
					out[ti].Unresolved++
					continue
				}
				if err := q.complete(ctx, conn, ti, args); err != nil {
					return out, err
				}
				var still uint64
				if err := conn.QueryRow(ctx, q.state[ti], args...).Scan(&still); err != nil {
					return out, fmt.Errorf("completing %s: %w", t.Name, err)
				}
				if still != 0 { // the insert was dropped: say so rather than count it
					out[ti].Unresolved++
					continue
				}
				out[ti].Completed += int(lacking)
				continue
			}
			var present, expected, part uint64
			if err := conn.QueryRow(ctx, q.state[ti], args...).Scan(&present, &expected, &part); err != nil {
				return out, fmt.Errorf("completing %s: %w", t.Name, err)
			}
			switch {
			case present == expected:
			case part != 0 && present+part == expected && repair:
				if err := q.complete(ctx, conn, ti, args); err != nil {
					return out, err
				}
				if err := conn.QueryRow(ctx, q.state[ti], args...).Scan(&present, &expected, &part); err != nil {
					return out, fmt.Errorf("completing %s: %w", t.Name, err)
				}
				if present != expected {
					out[ti].Unresolved++
					continue
				}
				out[ti].Completed++
			default:
				out[ti].Unresolved++
			}
		}
	}
	return out, nil
}

// derivedSQL is the checks' and completions' statements, rendered once
// (the completions once their columns are known).
type derivedSQL struct {
	t                           *template.Template
	state                       []string // "hourly state" or "runs state"
	byHourPresent, byHourFilled []string
	fillRuns                    []string // the fill over the block's runs
	fillWindow                  []string // the fill over samples' rows of @from to @to
	lackingInWindow             []string // a per-run table's runs to add, counted
	tables                      []string

	mu        sync.Mutex
	completes map[int]string
	columns   map[int]string
}

// derivedQueries reads the tables as reports do (on a cluster, through
// the Distributed tables); localDerivedQueries reads a cluster server's
// own tables.
var (
	derivedQueries      = sync.OnceValues(func() (*derivedSQL, error) { return renderDerived(func(t string) string { return t }) })
	localDerivedQueries = sync.OnceValues(func() (*derivedSQL, error) { return renderDerived(func(t string) string { return t + "_local" }) })
)

// derivedQuery is what check/derived.sql's templates are rendered with.
type derivedQuery struct {
	Table, Time, Measure, Fill, Hours, Columns, Samples string
}

// renderDerived renders the statements for the tables name gives.
func renderDerived(name func(table string) string) (*derivedSQL, error) {
	t, err := templates()
	if err != nil {
		return nil, err
	}
	q := &derivedSQL{t: t, completes: map[int]string{}, columns: map[int]string{}}
	fill := func(dt derivedTable, source string) (string, error) {
		src, err := execute(t, source, derivedQuery{Samples: name("samples")})
		if err != nil {
			return "", err
		}
		return execute(t, dt.Fill, dialect{Fine: dt.Fine}.Reading(src))
	}
	for _, dt := range derivedTables {
		var x derivedQuery
		x.Table, x.Time, x.Measure = name(dt.Name), dt.Time, cmpOr(dt.Measure, "count()")
		if x.Fill, err = fill(dt, "samples of runs"); err != nil {
			return nil, err
		}
		if x.Hours, err = fill(dt, "samples of hours"); err != nil {
			return nil, err
		}
		state := "hourly state"
		if dt.Measure == "" {
			state = "runs state"
		}
		s, err := execute(t, state, x)
		if err != nil {
			return nil, err
		}
		q.state = append(q.state, s)
		q.fillRuns = append(q.fillRuns, x.Fill)
		q.tables = append(q.tables, x.Table)
		if s, err = execute(t, "by hour present", x); err != nil {
			return nil, err
		}
		q.byHourPresent = append(q.byHourPresent, s)
		if x.Fill, err = fill(dt, "samples of window"); err != nil {
			return nil, err
		}
		if s, err = execute(t, "by hour filled", x); err != nil {
			return nil, err
		}
		q.byHourFilled = append(q.byHourFilled, s)
		q.fillWindow = append(q.fillWindow, x.Fill)
		if s, err = execute(t, "runs lacking in window", x); err != nil {
			return nil, err
		}
		q.lackingInWindow = append(q.lackingInWindow, s)
	}
	return q, nil
}

func execute(t *template.Template, name string, data any) (string, error) {
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("rendering %s: %w", name, err)
	}
	return b.String(), nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// complete inserts into derived table i its fill over the block's runs
// (an hourly table) or the runs of them it lacks (a per-run table).
func (q *derivedSQL) complete(ctx context.Context, conn driver.Conn, i int, args []any) error {
	st, err := q.completion(ctx, conn, i)
	if err != nil {
		return err
	}
	if err := conn.Exec(ctx, st, args...); err != nil {
		return fmt.Errorf("completing %s: %w", derivedTables[i].Name, err)
	}
	return nil
}

// completion returns derived table i's completing INSERT.
func (q *derivedSQL) completion(ctx context.Context, conn driver.Conn, i int) (string, error) {
	q.mu.Lock()
	st, ok := q.completes[i]
	q.mu.Unlock()
	if ok {
		return st, nil
	}
	columns, err := q.viewColumns(ctx, conn, i)
	if err != nil {
		return "", err
	}
	name := "complete block"
	if derivedTables[i].Measure == "" {
		name = "complete runs"
	}
	st, err = execute(q.t, name, derivedQuery{Table: q.tables[i], Columns: columns, Fill: q.fillRuns[i]})
	if err != nil {
		return "", err
	}
	q.mu.Lock()
	q.completes[i] = st
	q.mu.Unlock()
	return st, nil
}

// viewColumns returns derived table i's view's columns (the fill's), the
// column list of every INSERT into it, asked of the server once.
func (q *derivedSQL) viewColumns(ctx context.Context, conn driver.Conn, i int) (string, error) {
	q.mu.Lock()
	cols, ok := q.columns[i]
	q.mu.Unlock()
	if ok {
		return cols, nil
	}
	dt := derivedTables[i]
	rows, err := conn.Query(ctx, "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = @view",
		clickhouse.Named("view", dt.Name+"_mv"))
	if err != nil {
		return "", fmt.Errorf("reading the columns of %s's view: %w", dt.Name, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return "", fmt.Errorf("reading the columns of %s's view: %w", dt.Name, err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil || len(names) == 0 {
		return "", fmt.Errorf("reading the columns of %s's view: %d columns, %v", dt.Name, len(names), err)
	}
	cols = strings.Join(names, ", ")
	q.mu.Lock()
	q.columns[i] = cols
	q.mu.Unlock()
	return cols, nil
}

// Difference is one hour of one derived table that does not hold what
// samples says it should.
type Difference struct {
	Table             string
	Hour              time.Time
	Expected, Present uint64
}

// Check compares every derived table with samples over the hours from
// from to to (whole hours) and returns the hours where they differ: the
// table's measure (samples, runs or failures counted) against the same
// measure of its fill over the samples of the hour.
func Check(ctx context.Context, conn driver.Conn, from, to time.Time) ([]Difference, error) {
	q, err := derivedQueries()
	if err != nil {
		return nil, err
	}
	return checkWith(ctx, conn, q, from, to)
}

// checkWith is Check on the tables q names.
func checkWith(ctx context.Context, conn driver.Conn, q *derivedSQL, from, to time.Time) ([]Difference, error) {
	from, to = from.UTC().Truncate(time.Hour), to.UTC().Truncate(time.Hour)
	if to.Before(from) {
		return nil, fmt.Errorf("checking derived tables: the window ends (%s) before it starts (%s)", to, from)
	}
	args := []any{clickhouse.Named("from", from.Unix()), clickhouse.Named("to", to.Unix())}
	var out []Difference
	for i, t := range derivedTables {
		present, err := byHour(ctx, conn, q.byHourPresent[i], args)
		if err != nil {
			return nil, fmt.Errorf("checking %s: %w", t.Name, err)
		}
		expected, err := byHour(ctx, conn, q.byHourFilled[i], args)
		if err != nil {
			return nil, fmt.Errorf("checking %s: %w", t.Name, err)
		}
		var hours []uint32
		for h := range present {
			hours = append(hours, h)
		}
		for h := range expected {
			if _, ok := present[h]; !ok {
				hours = append(hours, h)
			}
		}
		slices.Sort(hours)
		for _, h := range hours {
			if present[h] != expected[h] {
				out = append(out, Difference{Table: t.Name, Hour: time.Unix(int64(h), 0).UTC(), Expected: expected[h], Present: present[h]})
			}
		}
	}
	return out, nil
}

func byHour(ctx context.Context, conn driver.Conn, query string, args []any) (map[uint32]uint64, error) {
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[uint32]uint64{}
	for rows.Next() {
		var h uint32
		var n uint64
		if err := rows.Scan(&h, &n); err != nil {
			return nil, err
		}
		out[h] = n
	}
	return out, rows.Err()
}
