package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/h3rum/h3rum/collector/internal/cli"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries"
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
	if err := cli.Parse(fs, args, stderr); err != nil {
		return err
	}
	now := time.Now()
	from, err := queries.ParseTime(*since, now)
	if err != nil {
		return cli.Usagef("--since: %v", err)
	}
	to, err := queries.ParseTime(*until, now)
	if err != nil {
		return cli.Usagef("--until: %v", err)
	}
	if !from.Before(to) {
		return cli.Usagef("--since (%s) must come before --until (%s)", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	conn, closeDB, err := st.open(ctx, nil, false)
	if err != nil {
		return err
	}
	defer closeDB()
	// The hour that holds --until is checked whole.
	diffs, err := store.Check(ctx, conn, from, to.Add(time.Hour-time.Nanosecond))
	if err != nil {
		return err
	}
	if len(diffs) == 0 {
		fmt.Fprintf(stdout, "every table filled from samples matches it, %s to %s (%d tables)\n",
			from.UTC().Truncate(time.Hour).Format(time.DateTime), to.UTC().Truncate(time.Hour).Add(time.Hour).Format(time.DateTime), len(store.DerivedTables()))
		return nil
	}
	fmt.Fprintf(stdout, "%-16s %-19s %12s %12s %12s\n", "table", "hour (UTC)", "in table", "from samples", "difference")
	for _, d := range diffs {
		fmt.Fprintf(stdout, "%-16s %-19s %12d %12d %+12d\n", d.Table, d.Hour.Format(time.DateTime), d.Present, d.Expected, int64(d.Present)-int64(d.Expected))
	}
	return errDifferences
}
