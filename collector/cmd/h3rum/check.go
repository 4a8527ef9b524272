package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/collector/internal/cli"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/params"
)

// errDifferences is check's answer when a derived table differs from
// samples: exit status 1, the differences already printed.
var errDifferences = errors.New("derived tables differ from samples")

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var st storeFlags
	st.register(fs)
	since := fs.String("since", "7d", "start of the window, a `time`: a duration before now (\"24h\", \"7d\"), RFC 3339, or a date; whole hours")
	until := fs.String("until", "now", "end of the window, a `time` as for --since")
	repair := fs.Bool("repair", false, fmt.Sprintf("rebuild each differing table and hour from samples, then check again; hours that ended less than %s ago are left alone, since the collector may still write into them; on a cluster, shard by shard on a replica that has caught up", store.RepairMinAge))
	if err := cli.Parse(fs, args, stderr); err != nil {
		return err
	}
	now := time.Now()
	from, err := params.ParseTime(*since, now)
	if err != nil {
		return cli.Usagef("--since: %v", err)
	}
	to, err := params.ParseTime(*until, now)
	if err != nil {
		return cli.Usagef("--until: %v", err)
	}
	if !from.Before(to) {
		return cli.Usagef("--since (%s) must come before --until (%s)", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	db, err := st.connect(ctx, nil, false)
	if err != nil {
		return err
	}
	defer db.Close()
	conn := db.Conn
	var cluster store.Cluster
	if st.cluster != "" {
		cluster = store.Cluster{Name: st.cluster, Dial: db.DialServer}
	}
	// The hour that holds --until is checked whole.
	from, to = from.UTC().Truncate(time.Hour), to.UTC().Truncate(time.Hour).Add(time.Hour)
	diffs, err := store.Check(ctx, conn, from, to)
	if err != nil {
		return err
	}
	if len(diffs) == 0 {
		fmt.Fprintf(stdout, "every table filled from samples matches it, %s to %s (%d tables)\n",
			from.Format(time.DateTime), to.Format(time.DateTime), len(store.DerivedTables()))
		return nil
	}
	printDifferences(stdout, diffs)
	if !*repair {
		return errDifferences
	}
	return repairDifferences(ctx, conn, cluster, stdout, diffs, from, to)
}

// repairDifferences repairs diffs (store.Repair), prints what it did and
// checks the window from to to again.
func repairDifferences(ctx context.Context, conn driver.Conn, cluster store.Cluster, stdout io.Writer, diffs []store.Difference, from, to time.Time) error {
	repaired, err := store.Repair(ctx, conn, cluster, diffs, time.Now())
	fmt.Fprintf(stdout, "\nrepair:\n")
	for _, r := range repaired {
		what := "rebuilt from samples"
		switch {
		case r.TooRecent:
			what = fmt.Sprintf("left alone: not yet %s past its end", store.RepairMinAge)
		case !r.Rebuilt:
			what = fmt.Sprintf("added %d runs from samples", r.Added)
		}
		fmt.Fprintf(stdout, "%-16s %-19s %s\n", r.Table, r.Hour.Format(time.DateTime), what)
	}
	if err != nil {
		return err
	}
	if diffs, err = store.Check(ctx, conn, from, to); err != nil {
		return err
	}
	if len(diffs) == 0 {
		fmt.Fprintf(stdout, "\nevery table filled from samples now matches it, %s to %s (%d tables)\n",
			from.Format(time.DateTime), to.Format(time.DateTime), len(store.DerivedTables()))
		return nil
	}
	fmt.Fprintf(stdout, "\nstill differing (a per-run table keeps the runs samples lacks; a recent hour is left alone; an hour written to during its rebuild is repaired by running again):\n")
	printDifferences(stdout, diffs)
	return errDifferences
}

// printDifferences prints diffs as a table, one line a table and hour.
func printDifferences(w io.Writer, diffs []store.Difference) {
	fmt.Fprintf(w, "%-16s %-19s %12s %12s %12s\n", "table", "hour (UTC)", "in table", "from samples", "difference")
	for _, d := range diffs {
		fmt.Fprintf(w, "%-16s %-19s %12d %12d %+12d\n", d.Table, d.Hour.Format(time.DateTime), d.Present, d.Expected, int64(d.Present)-int64(d.Expected))
	}
}
