package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// TestCheckCommand stores runs, one of them as a server killed between
// samples and the views leaves it: h3rum check names every table short of
// it in its hour and exits 1; once store.Complete has run, it exits 0.
func TestCheckCommand(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	conn := storetest.Open(t, dsn)
	at := time.Now().UTC().Add(-2 * time.Hour)
	var full, cut store.Batch
	for range 3 {
		r := storetest.Run(t, "check")
		r.Received = at
		full.Add(&r)
	}
	lost := storetest.Run(t, "check")
	lost.Received = at
	lost.Report.Samples[len(lost.Report.Samples)-1].Error = "timeout" // for failure_counts
	lost.Report.Samples[0].Reused = false                             // a new connection, for handshake_rollup and handshake_requests
	cut.Add(&lost)
	if err := full.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	reattach := storetest.DetachViews(t, conn, nil)
	if err := cut.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	reattach()
	check := func() (int, string) {
		var out, errOut bytes.Buffer
		err := run(ctx, []string{"check", "--clickhouse", dsn, "--since", "6h"}, &out, &errOut)
		return exitCode(err, io.Discard), out.String() + errOut.String()
	}
	code, out := check()
	if code != 1 {
		t.Errorf("check with a hole: exit %d, want 1\n%s", code, out)
	}
	hour := at.Truncate(time.Hour).Format(time.DateTime)
	for _, table := range store.DerivedTables() {
		if !strings.Contains(out, table+" ") || !strings.Contains(out, hour) {
			t.Errorf("check does not name %s in %s:\n%s", table, hour, out)
		}
	}
	if _, err := store.Complete(ctx, conn, store.Cluster{}, store.BlockOf([]*store.Run{&lost})); err != nil {
		t.Fatal(err)
	}
	if code, out := check(); code != 0 || !strings.Contains(out, "matches") {
		t.Errorf("check after Complete: exit %d\n%s", code, out)
	}
	var errOut bytes.Buffer
	err := run(ctx, []string{"check", "--clickhouse", dsn, "--since", "1h", "--until", "2h"}, io.Discard, &errOut)
	if code := exitCode(err, &errOut); code != 2 || !strings.Contains(errOut.String(), "must come before") {
		t.Errorf("check --since after --until: exit %d, %q", code, errOut.String())
	}
}

// TestCheckRepairCommand: h3rum check --repair rebuilds an old hour's
// holes and exits 0 once everything matches (and again, with nothing to
// do); a hole in the current hour is left alone and reported (exit 1).
func TestCheckRepairCommand(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	conn := storetest.Open(t, dsn)
	old, now := time.Now().UTC().Add(-3*time.Hour), time.Now().UTC()
	var full, cut store.Batch
	for range 3 {
		r := storetest.Run(t, "repair")
		r.Received = old
		full.Add(&r)
	}
	lost := storetest.Run(t, "repair")
	lost.Received = old
	lost.Report.Samples[len(lost.Report.Samples)-1].Error = "timeout" // for failure_counts
	lost.Report.Samples[0].Reused = false                             // a new connection, for handshake_rollup and handshake_requests
	cut.Add(&lost)
	if err := full.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	reattach := storetest.DetachViews(t, conn, nil)
	if err := cut.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	reattach()
	check := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		err := run(ctx, append([]string{"check", "--clickhouse", dsn, "--since", "6h"}, args...), &out, &errOut)
		return exitCode(err, &errOut), out.String() + errOut.String()
	}
	code, out := check("--repair")
	if code != 0 || !strings.Contains(out, "now matches") {
		t.Errorf("check --repair of an old hour: exit %d\n%s", code, out)
	}
	hour := old.Truncate(time.Hour).Format(time.DateTime)
	for _, want := range []string{"runs             " + hour + " added 1 runs", "samples_rollup   " + hour + " rebuilt from samples"} {
		if !strings.Contains(out, want) {
			t.Errorf("check --repair does not say %q:\n%s", want, out)
		}
	}
	if code, out := check("--repair"); code != 0 || strings.Contains(out, "repair:") {
		t.Errorf("check --repair again: exit %d\n%s", code, out)
	}

	recent := storetest.Run(t, "repair")
	recent.Received = now
	var b store.Batch
	b.Add(&recent)
	reattach = storetest.DetachViews(t, conn, nil)
	if err := b.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	reattach()
	code, out = check("--repair")
	if code != 1 || !strings.Contains(out, "left alone") || !strings.Contains(out, "still differing") || !strings.Contains(out, now.Truncate(time.Hour).Format(time.DateTime)) {
		t.Errorf("check --repair of the current hour: exit %d\n%s", code, out)
	}

	// A cluster is repaired shard by shard (TestCluster); a server that
	// knows no such cluster is an error that names it.
	code, out = check("--repair", "--cluster", "cluster")
	if code != 1 || !strings.Contains(out, "cluster cluster") {
		t.Errorf("check --repair --cluster: exit %d\n%s", code, out)
	}
}
