package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var st storeFlags
	st.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	conn, closeStore, err := st.open(ctx, nil, false)
	if err != nil {
		return err
	}
	defer closeStore()
	applied, err := st.migrate(ctx, conn)
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
