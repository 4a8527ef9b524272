package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// altSvcRuns are one run of each AltSvc value, from its wire report (v1
// for AltSvcUnrecorded, v2 with "alt" for the others), received from at
// on a second apart.
func altSvcRuns(t *testing.T, site string, at time.Time) []*store.Run {
	t.Helper()
	var out []*store.Run
	for a := beacon.AltSvcUnrecorded; a <= beacon.MaxAltSvc; a++ {
		run := storetest.RunOf(t, beacontest.Run{Site: site, Warmup: 2, Alt: int(a)})
		if run.Report.AltSvc != a {
			t.Fatalf("report with alt %d decodes as %d", a, run.Report.AltSvc)
		}
		run.Received = at.Add(time.Duration(a) * time.Second)
		out = append(out, &run)
	}
	return out
}

// checkAltSvc fails unless every sample of each run and its run_facts row
// hold the run's AltSvc.
func checkAltSvc(t *testing.T, conn driver.Conn, runs []*store.Run) {
	t.Helper()
	for _, r := range runs {
		id := uuid.UUID(r.Report.RunID).String()
		for _, q := range []string{
			"SELECT toString(groupUniqArray(alt_svc)) FROM samples WHERE run_id = toUUID(@id)",
			"SELECT toString(groupArray(alt_svc)) FROM run_facts FINAL WHERE run_id = toUUID(@id)",
		} {
			var got string
			if err := conn.QueryRow(context.Background(), q, clickhouse.Named("id", id)).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("[%d]", r.Report.AltSvc); got != want {
				t.Errorf("%s for run %s: %s, want %s", q, id, got, want)
			}
		}
	}
}

// Each AltSvc value is stored in every sample of its run and in its
// run_facts row, as the view makes it and as Complete makes it after an
// insert the view missed.
func TestAltSvcStored(t *testing.T) {
	conn := storetest.DB(t)
	at := time.Now().UTC().Truncate(time.Second)
	viewed := altSvcRuns(t, "alt", at)
	insertRuns(t, conn, viewed)
	checkAltSvc(t, conn, viewed)

	completed := altSvcRuns(t, "alt", at.Add(time.Minute))
	insertCut(t, conn, completed, []string{"runs"}) // a crash before run_facts' view
	if n := countRows(t, conn, "SELECT count() FROM run_facts"); n != uint64(len(viewed)) {
		t.Fatalf("run_facts holds %d rows after the cut, want %d", n, len(viewed))
	}
	if _, err := store.Complete(context.Background(), conn, store.Cluster{}, store.BlockOf(completed)); err != nil {
		t.Fatal(err)
	}
	checkAltSvc(t, conn, completed)
	// Every run's first request went over h3: run_fact_counts splits them
	// by where the Alt-Svc could have come from, 1 and 4 known before the
	// page, 2 and 3 learnt from it, 0 and 5 neither, in both halves.
	checkFirstH3Split(t, conn, 12, 4, 4)
}

// checkFirstH3Split fails unless run_fact_counts counts first, before and
// page runs whose first request went over h3, known before the page and
// learnt from it.
func checkFirstH3Split(t *testing.T, conn driver.Conn, first, before, page uint64) {
	t.Helper()
	var f, b, p uint64
	if err := conn.QueryRow(context.Background(),
		"SELECT sum(runs_first_h3), sum(runs_first_h3_before), sum(runs_first_h3_page) FROM run_fact_counts").Scan(&f, &b, &p); err != nil {
		t.Fatal(err)
	}
	if f != first || b != before || p != page {
		t.Errorf("run_fact_counts: %d runs first over h3, %d known before the page, %d learnt from it; want %d, %d, %d", f, b, p, first, before, page)
	}
}

// A database of the release before alt_svc, with runs stored, migrated:
// its rows read 0 (not recorded) in samples and run_facts, and the runs
// stored next carry their value through the view made again.
func TestAltSvcMigration(t *testing.T) {
	conn := releasedDB(t, upTo(57))
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	insertOldSamples(t, conn, at)
	before := countRows(t, conn, "SELECT count() FROM run_facts")
	if before == 0 {
		t.Fatal("the old runs made no run_facts rows")
	}
	applied, err := store.Migrate(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("applied %v", applied)
	for _, c := range []struct {
		q    string
		want uint64
	}{
		{"SELECT count() FROM samples WHERE alt_svc != 0", 0},
		{"SELECT count() FROM run_facts WHERE alt_svc != 0", 0},
		{"SELECT count() FROM run_facts", before},
	} {
		if n := countRows(t, conn, c.q); n != c.want {
			t.Errorf("%s: %d, want %d", c.q, n, c.want)
		}
	}
	var oldFirst uint64
	if err := conn.QueryRow(context.Background(), "SELECT sum(runs_first_h3) FROM run_fact_counts").Scan(&oldFirst); err != nil {
		t.Fatal(err)
	}
	runs := altSvcRuns(t, "new", at.Add(time.Hour))
	insertRuns(t, conn, runs)
	checkAltSvc(t, conn, runs)
	checkFirstH3Split(t, conn, oldFirst+6, 2, 2)
}
