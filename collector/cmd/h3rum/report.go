package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"strings"
	"time"

	"github.com/h3rum/h3rum/queries"
)

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var (
		st                        storeFlags
		since, until, format      string
		design                    string
		excluded                  bool
		o                         queries.Options
		warmup, failed, bots, raw bool
		baseSince, baseUntil      string
	)
	st.register(fs)
	fs.StringVar(&since, "since", "", `start of the window: a duration before now ("24h", "7d"), RFC 3339, or a date (default: 24 h before --until, back to the start of its hour)`)
	fs.StringVar(&until, "until", "now", "end of the window, as --since")
	fs.StringVar(&o.Site, "site", "", "only this data-site (default: all)")
	fs.StringVar(&o.By, "by", queries.DefaultBy, "grouping: "+strings.Join(queries.Groupings(), ", ")+" (collector: the POP whose probe served the samples)")
	fs.StringVar(&format, "format", "table", "output: table, json, csv, or html (one self-contained page with the dashboard's verdicts and charts, to mail or attach; it fetches nothing)")
	fs.IntVar(&o.MinRuns, "min-runs", 30, "groups with fewer runs are marked too small")
	fs.Float64Var(&o.VerdictP, "verdict-p", queries.DefaultVerdictP, "the percentile the verdicts judge: 50, 75, 90, 95 or 99")
	fs.Float64Var(&o.EffectMS, "effect-ms", queries.DefaultEffectMS, "the difference, in ms, for which each verdict says how many more runs would detect it")
	fs.BoolVar(&warmup, "include-warmup", false, "include warm-up requests")
	fs.BoolVar(&failed, "include-failed", false, "include failed requests in the percentiles")
	fs.BoolVar(&bots, "include-bots", false, "include runs from headless or automated browsers")
	fs.BoolVar(&excluded, "include-excluded", false, "widen past the like-for-like headline: include runs with exclusions (fallback, cold, failed warm-up, …)")
	fs.StringVar(&design, "design", "", `test design "parallel,bytes,warmup,major" (e.g. 5,0,2,1), or "all" to pool designs (default: the most common)`)
	fs.BoolVar(&raw, "raw", false, "compute point estimates from raw rows even where the hourly rollup could answer")
	fs.BoolVar(&o.Agent, "agent", false, "report the runs of h3rum agent (with its full, resumed and 0-RTT handshakes) instead of browsers'; never pooled")
	fs.StringVar(&baseSince, "baseline-since", "", "compare with a baseline window starting here (as --since): prints, per group, how H3 − H2 at --verdict-p changed (default with --baseline-until: the same length before it)")
	fs.StringVar(&baseUntil, "baseline-until", "", "end of the baseline window (default with --baseline-since or alone: the start of the report's window)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	now := time.Now()
	var err error
	if o.Since, err = queries.ParseTime(since, now); err != nil {
		return usagef("--since %q: %v", since, err)
	}
	if o.Until, err = queries.ParseTime(until, now); err != nil {
		return usagef("--until %q: %v", until, err)
	}
	o.IncludeWarmup, o.IncludeFailed, o.IncludeBots, o.IncludeExcluded, o.Now = warmup, failed, bots, excluded, now
	if o.Design, err = queries.ParseDesign(design); err != nil {
		return usagef("--design %q: %v", design, err)
	}
	if raw {
		o.Source = queries.SourceRaw
	}
	if err := o.Validate(); err != nil {
		return usageError{err.Error()}
	}
	switch format {
	case "table", "json", "csv", "html":
	default:
		return usagef("--format %q: want table, json, csv or html", format)
	}
	comparing := baseSince != "" || baseUntil != ""
	var bs, bu time.Time
	if comparing {
		if format == "csv" || format == "html" {
			return usagef("--format %s: a comparison is written as a table or json", format)
		}
		if bs, bu, err = queries.BaselineWindow(o, baseSince, baseUntil, now); err != nil {
			return usageError{err.Error()}
		}
	}

	conn, closeStore, err := st.open(ctx, nil, false)
	if err != nil {
		return err
	}
	defer closeStore()
	if comparing {
		c, err := queries.Compare(ctx, conn, o, bs, bu)
		if err != nil {
			if errors.Is(err, queries.ErrInvalidOptions) {
				return usageError{err.Error()}
			}
			return err
		}
		if format == "json" {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		}
		return c.WriteTable(stdout)
	}
	rep, err := queries.Run(ctx, conn, o)
	if err != nil {
		if errors.Is(err, queries.ErrInvalidOptions) {
			return usageError{err.Error()}
		}
		return err
	}
	switch format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "csv":
		return rep.WriteCSV(stdout)
	case "html":
		// The page's map is by country: a report by another grouping
		// carries the window's report by country beside it.
		var more []*queries.Report
		if o.By != "country" && !o.Agent {
			byCountry := o
			byCountry.By, byCountry.Headline = "country", true // what the map draws
			c, err := queries.Run(ctx, conn, byCountry)
			if err != nil {
				return err
			}
			more = append(more, c)
		}
		return rep.WriteHTML(stdout, more...)
	default:
		return rep.WriteTable(stdout)
	}
}
