package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// TestRunFactsCopyMatchesView stores the same runs in a database of the
// release before run_facts, which migration 0048 then copies from its
// samples, and in a new database, whose view makes each run's row as it is
// inserted: both hold the same rows. The runs cover every first-contact
// outcome, a run cut short in its warm-ups, the script's errors and a
// bot's run.
func TestRunFactsCopyMatchesView(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	runs := firstContactRuns(t, at)
	// The rows as today's Batch writes them hold the columns of later
	// steps (samples.run_flags, 0049), which the release before run_facts
	// lacked; step 0048 then applied as released, and the steps after it.
	released := releasedDB(t, withTodaysColumns(t, upTo(47)))
	insertRuns(t, released, runs)
	applyReleased(t, released, "migrations", func(v int) bool { return v == 48 }, nil)
	// The steps after it add what run_facts holds since (param_extra, 0056).
	if _, err := store.Migrate(context.Background(), released); err != nil {
		t.Fatal(err)
	}
	fresh := storetest.DB(t)
	insertRuns(t, fresh, runs)
	copied, viewed := runFacts(t, released), runFacts(t, fresh)
	if copied != viewed {
		t.Errorf("copied by 0048:\n%s\nmade by the view:\n%s", copied, viewed)
	}
	if n := countRows(t, fresh, "SELECT count() FROM run_facts"); n != uint64(len(runs)) {
		t.Errorf("run_facts holds %d rows, want one for each of the %d runs", n, len(runs))
	}
	expectCounts(t, fresh, []countCheck{
		{"SELECT count() FROM run_facts WHERE first_known = 1 AND first_h3 = 1", 4}, // the plain run, the script errors', the bot's and the one cut short
		{"SELECT count() FROM run_facts WHERE first_known = 1 AND first_h3 = 0 AND later_h3 = 1", 1},
		{"SELECT count() FROM run_facts WHERE first_known = 1 AND first_h3 = 0 AND later_h3 = 0", 1},
		{"SELECT count() FROM run_facts WHERE first_known = 0", 1},
		{"SELECT sum(script_errors_batch) + sum(script_errors_send) FROM run_facts", 3},
		{"SELECT count() FROM run_facts WHERE bot = 1", 1},
	})
}

// runFacts is run_facts' rows as text, in run order.
func runFacts(t *testing.T, conn driver.Conn) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT toString(tuple(*)) FROM run_facts ORDER BY time, run_id")
	if err != nil {
		t.Fatal(err)
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

// firstContactRuns are runs received from at on, a minute apart, of every
// first-contact outcome, one cut short in its warm-ups, one with the
// script's errors and a bot's.
func firstContactRuns(t *testing.T, at time.Time) []*store.Run {
	var out []*store.Run
	for i, plant := range []func(*store.Run){
		nil,
		func(r *store.Run) { r.Report.Samples[0].Got = beacon.ProtoH2 }, // upgraded by Alt-Svc
		func(r *store.Run) { // never h3
			for k := range r.Report.Samples {
				if r.Report.Samples[k].Want == beacon.ProtoH3 {
					r.Report.Samples[k].Got = beacon.ProtoH2
				}
			}
		},
		func(r *store.Run) { r.Report.Samples[0].Error = "timeout" },
		func(r *store.Run) { // cut short in its warm-ups: no parallel sample
			r.Report.Samples = r.Report.Samples[:2]
			r.Report.Partial = true
		},
		func(r *store.Run) { r.Report.ScriptErrors.Batch, r.Report.ScriptErrors.Send = 2, 1 },
		func(r *store.Run) { r.Bot = true },
	} {
		run := storetest.RunOf(t, beacontest.Run{Site: "facts", Warmup: 2})
		run.Received = at.Add(time.Duration(i) * time.Minute)
		run.Geo.Continent, run.Geo.Country, run.Browser = "EU", "DE", "Chrome"
		if plant != nil {
			plant(&run)
		}
		out = append(out, &run)
	}
	return out
}

// TestRunFactsByTimeCopyMatchesView stores runs in a database of the
// release before step 0067, which makes run_facts again sorted by time and
// fills it from samples, and in a new database, whose view makes each
// run's row: both hold the same rows, sorted by time.
func TestRunFactsByTimeCopyMatchesView(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	runs := firstContactRuns(t, at)
	released, fresh := copiedAndViewed(t, "0067_run_facts_by_time.sql", runs, 3)
	copied, viewed := runFacts(t, released), runFacts(t, fresh)
	if copied == "" || copied != viewed {
		t.Errorf("copied by 0067:\n%s\nmade by the view:\n%s", copied, viewed)
	}
	for _, conn := range []driver.Conn{released, fresh} {
		var key string
		if err := conn.QueryRow(context.Background(), "SELECT sorting_key FROM system.tables WHERE database = currentDatabase() AND name = 'run_facts'").Scan(&key); err != nil || key != "site, time, run_id" {
			t.Errorf("run_facts sorted by %q, %v; want site, time, run_id", key, err)
		}
	}
}
