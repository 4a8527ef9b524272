package store_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// TestRunCountsCopyMatchesView stores the same runs in a database of the
// release before run_counts, which migration 0051 then fills from its runs
// table, and in a new database, whose view counts each run as the runs
// table receives it, in two inserts: both hold the counts the runs table
// gives when counted row by row, key by key. The runs differ in every key
// the report selects by: hour, region, batch order, bot, exclusions and the
// outcomes among their parallel requests.
func TestRunCountsCopyMatchesView(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 20, 0, 0, time.UTC)
	runs := plantedRuns(t, "counts", at, []func(*store.Run){
		nil,
		nil, // a second run of the same key: counted 2
		func(r *store.Run) { r.Received = r.Received.Add(time.Hour) },
		func(r *store.Run) { r.Geo.Continent, r.Geo.Country = "NA", "US" },
		func(r *store.Run) { r.Report.Params.Order = "h2first" },
		func(r *store.Run) { r.Bot = true },
		func(r *store.Run) { r.Report.Samples[len(r.Report.Samples)-1].Error = "timeout" }, // excluded: failed
		func(r *store.Run) { // wanted h3, got h2 in its H3 batch
			for k := range r.Report.Samples {
				if r.Report.Samples[k].Want == beacon.ProtoH3 {
					r.Report.Samples[k].Got = beacon.ProtoH2
				}
			}
		},
	}, nil)
	released, fresh := copiedAndViewed(t, "0051_run_counts.sql", runs, 3)
	const keys = "toStartOfHour(time), site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions"
	counted := rowsText(t, fresh, "SELECT toString(tuple("+keys+", count(), countIf(has(outcomes, 1)), countIf(has(outcomes, 2)), countIf(has(outcomes, 3)), countIf(has(outcomes, 0)), "+
		"countIf(cold_h2 > 0), countIf(cold_h3 > 0), countIf(has(wants, 2)), countIf(h3n > 0), countIf(has(failed_wants, 2)), countIf(has(failed_wants, 3)), countIf(h3ok < h3n))) AS k "+
		"FROM runs GROUP BY "+keys+" ORDER BY k")
	const sumKeys = "hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_order, bot, exclusions"
	const summed = "SELECT toString(tuple(" + sumKeys + ", sum(runs), sum(runs_h2), sum(runs_h3), sum(runs_wanted_h3_got_h2), sum(runs_other), " +
		"sum(runs_cold_h2), sum(runs_cold_h3), sum(runs_to_h2), sum(runs_to_h3), sum(runs_failed_h2), sum(runs_failed_h3), sum(runs_h3_short))) AS k " +
		"FROM run_counts GROUP BY " + sumKeys + " ORDER BY k"
	copied, viewed := rowsText(t, released, summed), rowsText(t, fresh, summed)
	if counted == "" || copied != counted || viewed != counted {
		t.Errorf("the runs table, counted:\n%s\nrun_counts, copied by 0051:\n%s\nrun_counts, made by the view:\n%s", counted, copied, viewed)
	}
	if n := countRows(t, fresh, "SELECT count() FROM runs"); n != uint64(len(runs)) {
		t.Fatalf("runs holds %d rows, want one for each of the %d runs", n, len(runs))
	}
	expectCounts(t, fresh, []countCheck{
		{"SELECT sum(runs) FROM run_counts", uint64(len(runs))},
		{"SELECT sum(runs) FROM run_counts WHERE continent = 'EU' AND hour = toDateTime('2026-11-30 10:00:00', 'UTC') AND exclusions = 0 AND param_order = 'h3first'", 2},
		{"SELECT sum(runs_h2) + sum(runs_h3) FROM run_counts WHERE continent = 'EU' AND hour = toDateTime('2026-11-30 10:00:00', 'UTC') AND exclusions = 0 AND param_order = 'h3first'", 4},
		{"SELECT sum(runs_wanted_h3_got_h2) FROM run_counts", 1},
		{"SELECT sum(runs) FROM run_counts WHERE bot = 1", 1},
		{"SELECT sum(runs_failed_h2) FROM run_counts", 1},                            // the timeout, the last request: the H2 batch's
		{"SELECT sum(runs_h3_short) FROM run_counts", 1},                             // the one that wanted h3
		{"SELECT toUInt64(sum(runs_to_h3) - sum(runs_h3_short)) FROM run_counts", 7}, // HTTP/3 available to every other run
		{"SELECT sum(runs_cold_h2) + sum(runs_cold_h3) FROM run_counts", 0},          // warmed up: no cold batch request
		{"SELECT sum(runs) FROM run_counts WHERE exclusions != 0", 3},                // the bot's, the failed one and the one that wanted h3
	})
}

// rowsText is the first column of q's rows, a line each.
func rowsText(t *testing.T, conn driver.Conn, q string) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out += s + "\n"
	}
	return out
}

// TestRunFactCountsCopyMatchesView stores runs of every first-contact
// outcome, one cut short in its warm-ups, one with script errors and a
// bot's, in a database of the release before run_fact_counts, which
// migration 0052 then fills from run_facts, and in a new database, whose
// view counts each run as it is inserted: both hold the counts run_facts
// gives when counted row by row, key by key.
func TestRunFactCountsCopyMatchesView(t *testing.T) {
	runs := firstContactRuns(t, time.Date(2026, 11, 30, 10, 40, 0, 0, time.UTC))
	released, fresh := copiedAndViewed(t, "0052_run_fact_counts.sql", runs, 2)
	const keys = "toStartOfHour(time), site, continent, country, browser, bot, param_parallel, param_bytes, param_warmup, beacon_major, beacon_version"
	counted := rowsText(t, fresh, "SELECT toString(tuple("+keys+", count(), countIf(h3_wanted = 1), "+
		"countIf(h3_wanted = 1 AND first_known = 1 AND first_h3 = 1), countIf(h3_wanted = 1 AND first_known = 1 AND first_h3 = 0 AND later_h3 = 1), "+
		"countIf(h3_wanted = 1 AND first_known = 1 AND first_h3 = 0 AND later_h3 = 0), "+
		"countIf(script_errors_idle + script_errors_warmup + script_errors_batch + script_errors_timing + script_errors_send > 0), "+
		"sum(script_errors_idle), sum(script_errors_warmup), sum(script_errors_batch), sum(script_errors_timing), sum(script_errors_send))) AS k "+
		"FROM run_facts GROUP BY "+keys+" ORDER BY k")
	const sumKeys = "hour, site, continent, country, browser, bot, param_parallel, param_bytes, param_warmup, beacon_major, beacon_version"
	const summed = "SELECT toString(tuple(" + sumKeys + ", sum(runs), sum(runs_h3_wanted), sum(runs_first_h3), sum(runs_upgraded), sum(runs_never_h3), " +
		"sum(runs_with_errors), sum(errors_idle), sum(errors_warmup), sum(errors_batch), sum(errors_timing), sum(errors_send))) AS k " +
		"FROM run_fact_counts GROUP BY " + sumKeys + " ORDER BY k"
	copied, viewed := rowsText(t, released, summed), rowsText(t, fresh, summed)
	if counted == "" || copied != counted || viewed != counted {
		t.Errorf("run_facts, counted:\n%s\nrun_fact_counts, copied by 0052:\n%s\nrun_fact_counts, made by the view:\n%s", counted, copied, viewed)
	}
	expectCounts(t, fresh, []countCheck{
		{"SELECT sum(runs) FROM run_fact_counts", uint64(len(runs))},
		{"SELECT sum(runs_first_h3) FROM run_fact_counts", 4}, // the plain run, the script errors', the bot's and the one cut short
		{"SELECT sum(runs_upgraded) FROM run_fact_counts", 1},
		{"SELECT sum(runs_never_h3) FROM run_fact_counts", 1},
		{"SELECT sum(errors_batch) + sum(errors_send) FROM run_fact_counts", 3},
		{"SELECT sum(runs) FROM run_fact_counts WHERE bot = 1", 1},
	})
}

// TestFailureCountsCopyMatchesView stores runs with failed requests to
// either origin, of two error codes, two in one run, in two hours and a
// bot's, in a database of the release before failure_counts, which
// migration 0053 then fills from the runs table, and in a new database,
// whose view counts each failure as it is inserted: both hold the
// failures the runs table gives when counted row by row, key by key.
func TestFailureCountsCopyMatchesView(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 20, 0, 0, time.UTC)
	fail := func(want beacon.Proto, code string, n int) func(*store.Run) {
		return func(r *store.Run) {
			for k := range r.Report.Samples {
				if s := &r.Report.Samples[k]; n > 0 && s.Phase == beacon.PhaseParallel && s.Want == want && s.Error == "" {
					s.Error, n = code, n-1
				}
			}
		}
	}
	runs := plantedRuns(t, "failures", at, []func(*store.Run){
		nil, // no failure: counted nowhere
		fail(beacon.ProtoH2, "timeout", 1),
		fail(beacon.ProtoH3, "timeout", 2), // two in one run
		fail(beacon.ProtoH3, "network", 1),
		func(r *store.Run) { fail(beacon.ProtoH3, "network", 1)(r); r.Received = r.Received.Add(time.Hour) },
		func(r *store.Run) { fail(beacon.ProtoH2, "timeout", 1)(r); r.Bot = true },
	}, nil)
	released, fresh := copiedAndViewed(t, "0053_failure_counts.sql", runs, 3)
	const keys = "toStartOfHour(time), site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, bot, w, e"
	counted := rowsText(t, fresh, "SELECT toString(tuple("+keys+", count())) AS k "+
		"FROM runs ARRAY JOIN failed_wants AS w, failed_errors AS e GROUP BY "+keys+" ORDER BY k")
	const sumKeys = "hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, bot, want, error"
	const summed = "SELECT toString(tuple(" + sumKeys + ", sum(failures))) AS k FROM failure_counts GROUP BY " + sumKeys + " ORDER BY k"
	copied, viewed := rowsText(t, released, summed), rowsText(t, fresh, summed)
	if counted == "" || copied != counted || viewed != counted {
		t.Errorf("the runs table's failures, counted:\n%s\nfailure_counts, copied by 0053:\n%s\nfailure_counts, made by the view:\n%s", counted, copied, viewed)
	}
	expectCounts(t, fresh, []countCheck{
		{"SELECT sum(failures) FROM failure_counts", 6},
		{"SELECT sum(failures) FROM failure_counts WHERE want = 'h3' AND error = 'timeout'", 2},
		{"SELECT sum(failures) FROM failure_counts WHERE want = 'h3' AND error = 'network' AND hour = toDateTime('2026-11-30 11:00:00', 'UTC')", 1},
		{"SELECT sum(failures) FROM failure_counts WHERE bot = 1", 1},
	})
}

// TestIttRollupCopyMatchesView stores runs with failed requests to
// either origin, in two hours, a bot's and one of another batch order, in
// a database of the release before itt_rollup, which migration 0054 then
// fills from samples_rollup's states, and in a new database, whose view
// feeds it from each insert: both hold, key by key, the requests and the
// t-digest quantiles the samples give when digested directly.
func TestIttRollupCopyMatchesView(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 20, 0, 0, time.UTC)
	fail := func(r *store.Run, want beacon.Proto) {
		for k := range r.Report.Samples {
			if s := &r.Report.Samples[k]; s.Phase == beacon.PhaseParallel && s.Want == want {
				s.Error = "timeout"
				return
			}
		}
	}
	runs := plantedRuns(t, "itt", at, []func(*store.Run){
		nil,
		nil,
		func(r *store.Run) { fail(r, beacon.ProtoH2) },
		func(r *store.Run) { fail(r, beacon.ProtoH3) },
		func(r *store.Run) { r.Report.Params.Order = "h2first" },
		func(r *store.Run) { r.Received = r.Received.Add(time.Hour) },
		func(r *store.Run) { r.Bot = true },
	}, func(i int, r *store.Run) {
		for k := range r.Report.Samples {
			r.Report.Samples[k].Duration = float64(10 + 7*i + 3*k)
		}
	})
	released, fresh := copiedAndViewed(t, "0054_itt_rollup.sql", runs, 3)
	const keys = "hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, want, failed, bot"
	digested := rowsText(t, fresh, "SELECT toString(tuple("+keys+", count(), arrayMap(x -> round(x, 3), "+
		"quantilesTDigest(0.5, 0.75, 0.9, 0.95, 0.99)(if(error = '', duration_ms, toFloat32(10000)))))) AS k FROM "+
		"(SELECT toStartOfHour(time) AS hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, want, "+
		"toUInt8(error != '') AS failed, toUInt8(bitAnd(exclusions, 64) != 0) AS bot, error, duration_ms FROM samples "+
		"WHERE phase = 'parallel') GROUP BY "+keys+" ORDER BY k")
	const merged = "SELECT toString(tuple(" + keys + ", countMerge(samples), arrayMap(x -> round(x, 3), " +
		"quantilesTDigestMerge(0.5, 0.75, 0.9, 0.95, 0.99)(duration)))) AS k FROM itt_rollup GROUP BY " + keys + " ORDER BY k"
	copied, viewed := rowsText(t, released, merged), rowsText(t, fresh, merged)
	if digested == "" || copied != digested || viewed != digested {
		t.Errorf("the samples, digested:\n%s\nitt_rollup, copied by 0054:\n%s\nitt_rollup, made by the view:\n%s", digested, copied, viewed)
	}
	expectCounts(t, fresh, []countCheck{
		{"SELECT countMerge(samples) FROM itt_rollup", uint64(len(runs) * 2 * 5)},
		{"SELECT countMerge(samples) FROM itt_rollup WHERE failed = 1", 2},
		{"SELECT countMerge(samples) FROM itt_rollup WHERE bot = 1", 2 * 5}, // five requests a batch
		{"SELECT count() FROM (SELECT DISTINCT hour FROM itt_rollup)", 2},
	})
}

// plantedRuns returns a run of site a minute apart from at for each
// plant, in Europe (DE) on Chrome, with its parallel requests as
// prepare (if not nil) sets them, then changed by plant (if not nil).
func plantedRuns(t *testing.T, site string, at time.Time, plants []func(*store.Run), prepare func(i int, r *store.Run)) []*store.Run {
	t.Helper()
	var runs []*store.Run
	for i, plant := range plants {
		run := storetest.RunOf(t, beacontest.Run{Site: site, Warmup: 2})
		run.Received = at.Add(time.Duration(i) * time.Minute)
		run.Geo.Continent, run.Geo.Country, run.Browser = "EU", "DE", "Chrome"
		if prepare != nil {
			prepare(i, &run)
		}
		if plant != nil {
			plant(&run)
		}
		runs = append(runs, &run)
	}
	return runs
}

// copiedAndViewed stores runs in a database of the release before step
// (a migration's file name), which step must then be the first to
// migrate, and in a new database in two inserts (runs[:split], the rest):
// the first holds what step copied of them, the second what the views
// made of them.
func copiedAndViewed(t *testing.T, step string, runs []*store.Run, split int) (released, fresh driver.Conn) {
	t.Helper()
	n, err := strconv.Atoi(step[:4])
	if err != nil {
		t.Fatal(err)
	}
	released = releasedDB(t, withTodaysColumns(t, upTo(n-1)))
	insertRuns(t, released, runs)
	if applied, err := store.Migrate(context.Background(), released); err != nil || len(applied) == 0 || applied[0] != step {
		t.Fatalf("migrating the release before %s applied %v, %v", step, applied, err)
	}
	fresh = storetest.DB(t)
	insertRuns(t, fresh, runs[:split])
	insertRuns(t, fresh, runs[split:])
	return released, fresh
}

// insertRuns stores runs in one insert.
func insertRuns(t *testing.T, conn driver.Conn, runs []*store.Run) {
	t.Helper()
	var b store.Batch
	for _, r := range runs {
		b.Add(r)
	}
	if err := b.Insert(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
}

// releasedDB is a new database made as the releases made it, with the
// released steps selected.
func releasedDB(t *testing.T, selected func(int) bool) driver.Conn {
	t.Helper()
	conn := emptyDB(t)
	applyReleased(t, conn, "migrations", selected, nil)
	return conn
}

// TestHandshakeRollupCopyMatchesView stores handshakeRuns in a database
// of the release before handshake_rollup, which migration 0063 then fills from
// samples, and in a new database, whose view feeds it from each insert:
// both hold, key by key, the counts, sums and t-digest quantiles the
// samples give when digested directly.
func TestHandshakeRollupCopyMatchesView(t *testing.T) {
	runs := handshakeRuns(t)
	released, fresh := copiedAndViewed(t, "0063_handshake_rollup.sql", runs, 3)
	const keys = "hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_extra, got, retried"
	const levels, merge = "quantilesTDigest(0.5, 0.75, 0.9, 0.95, 0.99)", "quantilesTDigestMerge(0.5, 0.75, 0.9, 0.95, 0.99)"
	digested := rowsText(t, fresh, "SELECT toString(tuple("+keys+", count(), arrayMap(x -> round(x, 3), "+levels+"(duration_ms)), "+
		"arrayMap(x -> round(x, 3), "+levels+"(connect_ms)), min(duration_ms), sum(srv_resumed), sum(srv_early))) AS k FROM "+
		"(SELECT toStartOfHour(time) AS hour, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_extra, "+
		"got, srv_retry AS retried, duration_ms, connect_ms, srv_resumed, srv_early FROM samples "+
		"WHERE reused = 0 AND error = '' AND got IN ('h2', 'h3') AND bot = 0) GROUP BY "+keys+" ORDER BY k")
	const merged = "SELECT toString(tuple(" + keys + ", countMerge(samples), arrayMap(x -> round(x, 3), " + merge + "(duration)), " +
		"arrayMap(x -> round(x, 3), " + merge + "(connect)), minMerge(fastest), sumMerge(resumed), sumMerge(early))) AS k " +
		"FROM handshake_rollup GROUP BY " + keys + " ORDER BY k"
	copied, viewed := rowsText(t, released, merged), rowsText(t, fresh, merged)
	if digested == "" || copied != digested || viewed != digested {
		t.Errorf("the samples, digested:\n%s\nhandshake_rollup, copied by 0063:\n%s\nhandshake_rollup, made by the view:\n%s", digested, copied, viewed)
	}
	newConns := countRows(t, fresh, "SELECT count() FROM samples WHERE reused = 0 AND error = '' AND bot = 0")
	expectCounts(t, fresh, []countCheck{
		{"SELECT countMerge(samples) FROM handshake_rollup", newConns},
		{"SELECT countMerge(samples) FROM handshake_rollup WHERE retried = 1", 1},
		{"SELECT sumMerge(resumed) FROM handshake_rollup", 2},
		{"SELECT sumMerge(early) FROM handshake_rollup", 1},
		{"SELECT count() FROM (SELECT DISTINCT hour FROM handshake_rollup)", 2},
	})
	if n := countRows(t, fresh, "SELECT count() FROM samples WHERE reused = 1"); newConns == 0 || n == 0 {
		t.Fatalf("the planted runs have %d requests on new connections and %d on reused ones, want both", newConns, n)
	}
}

// handshakeRuns are runs whose requests opened new connections or reused
// them, resumed TLS, sent 0-RTT, paid a Retry or failed, in two hours,
// with a bot's among them.
func handshakeRuns(t *testing.T) []*store.Run {
	at := time.Date(2026, 11, 30, 10, 20, 0, 0, time.UTC)
	return plantedRuns(t, "hs", at, []func(*store.Run){
		nil,
		func(r *store.Run) { r.Report.Samples[0].Server.Resumed = true },
		func(r *store.Run) {
			r.Report.Samples[1].Server.EarlyData, r.Report.Samples[1].Server.Resumed = true, true
		},
		func(r *store.Run) { r.Report.Samples[0].Server.Retry = true },
		func(r *store.Run) { r.Report.Samples[2].Error = "timeout" },
		func(r *store.Run) { r.Received = r.Received.Add(time.Hour) },
		func(r *store.Run) { r.Bot = true },
	}, func(i int, r *store.Run) {
		for k := range r.Report.Samples {
			s := &r.Report.Samples[k]
			s.Duration, s.Connect = float64(20+7*i+3*k), float64(5+i+k)
			s.Reused = k%3 == 2
		}
	})
}

// TestHandshakeRequestsCopyMatchesView stores handshakeRuns in a database
// of the release before handshake_requests, which migration 0065 then
// fills from samples, and in a new database, whose view feeds it from
// each insert: both hold, row for row, the requests on new connections
// that samples holds (successful, over h2 or h3, bots' left out).
func TestHandshakeRequestsCopyMatchesView(t *testing.T) {
	released, fresh := copiedAndViewed(t, "0065_handshake_requests.sql", handshakeRuns(t), 3)
	const cols = "time, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_extra, got, retried, duration_ms, connect_ms, resumed, early"
	selected := rowsText(t, fresh, "SELECT toString(tuple(time, site, continent, country, param_parallel, param_bytes, param_warmup, beacon_major, param_extra, "+
		"got, srv_retry, duration_ms, connect_ms, srv_resumed, srv_early)) AS k FROM samples "+
		"WHERE reused = 0 AND error = '' AND got IN ('h2', 'h3') AND bot = 0 ORDER BY k")
	const stored = "SELECT toString(tuple(" + cols + ")) AS k FROM handshake_requests ORDER BY k"
	copied, viewed := rowsText(t, released, stored), rowsText(t, fresh, stored)
	if selected == "" || copied != selected || viewed != selected {
		t.Errorf("the samples, selected:\n%s\nhandshake_requests, copied by 0065:\n%s\nhandshake_requests, made by the view:\n%s", selected, copied, viewed)
	}
	expectCounts(t, fresh, []countCheck{
		{"SELECT count() FROM handshake_requests", countRows(t, fresh, "SELECT count() FROM samples WHERE reused = 0 AND error = '' AND bot = 0")},
		{"SELECT count() FROM handshake_requests WHERE retried = 1", 1},
		{"SELECT sum(resumed) FROM handshake_requests", 2},
		{"SELECT sum(early) FROM handshake_requests", 1},
		{"SELECT count() FROM (SELECT DISTINCT toStartOfHour(time) FROM handshake_requests)", 2},
	})
}

// countCheck is a query that counts something and the count it should give.
type countCheck struct {
	q    string
	want uint64
}

// expectCounts runs each check's query on conn.
func expectCounts(t *testing.T, conn driver.Conn, checks []countCheck) {
	t.Helper()
	for _, c := range checks {
		if n := countRows(t, conn, c.q); n != c.want {
			t.Errorf("%s: %d, want %d", c.q, n, c.want)
		}
	}
}

// TestFiveMinuteTwinsCopyMatchView stores runs over two hours' five-minute
// slots in a database of the release before the twins, which migration
// 0066 then fills from samples, and in a new database, whose views feed
// them from each insert: each twin holds, by five minutes, what its hourly
// table holds by hour (summed by hour, the same measure for every site and
// place), in as many slots as the runs fell in, copied and viewed alike.
func TestFiveMinuteTwinsCopyMatchView(t *testing.T) {
	rng := rand.New(rand.NewPCG(66, 5))
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var runs []*store.Run
	for _, m := range []int{2, 7, 14, 31, 58, 63, 97} { // minutes: 7 slots of 2 hours
		rs := derivedRuns(t, rng, "twins", at.Add(time.Duration(m)*time.Minute), 3)
		rs[0].Report.Samples[len(rs[0].Report.Samples)-1].Error = "timeout" // a failure in every slot
		runs = append(runs, rs...)
	}
	released, fresh := copiedAndViewed(t, "0066_five_minute_rollups.sql", runs, 9)
	for _, tc := range []struct{ table, measure string }{
		{"samples_rollup", "countMerge(samples)"},
		{"itt_rollup", "countMerge(samples)"},
		{"run_counts", "sum(runs)"},
		{"run_fact_counts", "sum(runs)"},
		{"failure_counts", "sum(failures)"},
		{"handshake_rollup", "countMerge(samples)"},
	} {
		byHour := func(table string) string {
			return "SELECT toString(tuple(toStartOfHour(hour), site, continent, country, " + tc.measure + ")) AS k FROM " + table +
				" GROUP BY toStartOfHour(hour), site, continent, country ORDER BY k"
		}
		hourly := rowsText(t, fresh, byHour(tc.table))
		twin := store.FiveMinuteTwin(tc.table)
		copied, viewed := rowsText(t, released, byHour(twin)), rowsText(t, fresh, byHour(twin))
		if hourly == "" || copied != hourly || viewed != hourly {
			t.Errorf("%s by hour:\n%s\n%s copied by 0066, by hour:\n%s\n%s made by its view, by hour:\n%s", tc.table, hourly, twin, copied, twin, viewed)
		}
		slots := "SELECT count() FROM (SELECT DISTINCT hour FROM " + twin + ")"
		expectCounts(t, released, []countCheck{{slots, 7}})
		expectCounts(t, fresh, []countCheck{{slots, 7}})
	}
}
