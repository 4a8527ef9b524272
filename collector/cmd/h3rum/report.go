package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"slices"
	"time"

	"github.com/h3rum/h3rum/collector/internal/cli"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/params"
	"github.com/h3rum/h3rum/queries/render"
)

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var st storeFlags
	st.register(fs)
	format := fs.String("format", "table", "output: table, json, csv, or html (one self-contained page with the dashboard's verdicts and charts, to mail or attach; it fetches nothing)")
	opts := params.RegisterFlags(fs)
	if err := cli.Parse(fs, args, stderr); err != nil {
		return err
	}
	req, err := opts.Request(time.Now())
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	switch {
	case !slices.Contains([]string{"table", "json", "csv", "html"}, *format):
		return cli.Usagef("--format %q: want table, json, csv or html", *format)
	case req.Compare && *format != "table" && *format != "json":
		return cli.Usagef("--format %s: a comparison is written as a table or json", *format)
	}
	conn, closeStore, err := st.open(ctx, nil, false)
	if err != nil {
		return err
	}
	defer closeStore()
	o, rep := req.Options, (*model.Report)(nil)
	var (
		res   any                   // what --format json writes
		table func(io.Writer) error // and --format table
	)
	if req.Compare {
		var c *model.Comparison
		c, err = queries.Compare(ctx, conn, o, req.BaselineSince, req.BaselineUntil)
		res, table = c, func(w io.Writer) error { return render.Comparison(w, c) }
	} else if rep, err = queries.Run(ctx, conn, o); err == nil {
		res, table = rep, func(w io.Writer) error { return render.Table(w, rep) }
	}
	if errors.Is(err, model.ErrInvalidOptions) {
		return cli.UsageError{Msg: err.Error()}
	} else if err != nil {
		return err
	}
	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	case "csv":
		return render.CSV(stdout, rep)
	case "html":
		// The page's map is by country: beside another grouping, the window's report by country.
		if o.By == "country" || o.Agent {
			return render.HTML(stdout, rep)
		}
		o.By, o.Headline = "country", true // what the map draws
		byCountry, err := queries.Run(ctx, conn, o)
		if err != nil {
			return err
		}
		return render.HTML(stdout, rep, byCountry)
	}
	return table(stdout)
}
