package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/h3rum/h3rum/collector/internal/cli"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var st storeFlags
	st.register(fs)
	if err := cli.Parse(fs, args, stderr); err != nil {
		return err
	}
	db, err := st.connect(ctx, nil, false)
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "schema is up to date")
	} else {
		fmt.Fprintln(stdout, "applied:", strings.Join(applied, ", "))
	}
	return nil
}
