// Command mkasn builds an ASN database in MaxMind's GeoLite2-ASN layout from
// the CSV files of the @ip-location-db/asn npm package (RouteViews, NRO and
// DB-IP Lite data, CC BY 4.0), for `h3rum serve --asn-db` without a MaxMind
// account. `make geoip` runs it:
//
//	go run ./collector/cmd/mkasn -o var/geoip/asn.mmdb asn-ipv4.csv asn-ipv6.csv
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "mkasn:", err)
		os.Exit(1)
	}
}

const defaultDescription = "ip-location-db asn (RouteViews, NRO and DB-IP Lite data, CC BY 4.0) in the GeoLite2-ASN layout"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mkasn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "the database to write (required); written beside it under a temporary name, then renamed")
	desc := fs.String("description", defaultDescription, "the database's English description (metadata)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mkasn -o asn.mmdb asn-ipv4.csv [asn-ipv6.csv …]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-o is required (the .mmdb file to write)")
	}
	if fs.NArg() == 0 {
		return errors.New("no CSV files given (the asn-ipv4.csv and asn-ipv6.csv of @ip-location-db/asn)")
	}

	began := time.Now()
	b, err := newBuilder(*desc)
	if err != nil {
		return err
	}
	for _, name := range fs.Args() {
		if err := addFile(ctx, b, name); err != nil {
			return err
		}
	}
	size, err := writeFile(*out, b)
	if err != nil {
		return err
	}
	for _, l := range b.leftOut {
		fmt.Fprintln(stderr, "mkasn: left out", l)
	}
	fmt.Fprintf(stdout, "mkasn: wrote %s (%.1f MB) in %s: %d ranges as %d networks (%d in reserved or IPv4-aliased space left out)\n",
		*out, float64(size)/1e6, time.Since(began).Round(100*time.Millisecond), b.rows, b.networks, b.skipped)
	return nil
}

func addFile(ctx context.Context, b *builder, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("opening CSV file: %w", err)
	}
	defer f.Close()
	return b.addCSV(ctx, name, bufio.NewReaderSize(f, 1<<20))
}

// writeFile writes the database to a temporary file beside path and renames
// it into place, so a failed or interrupted build never leaves a truncated
// database where `make run` would pass it to the collector.
func writeFile(path string, b *builder) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mkasn-*.tmp")
	if err != nil {
		return 0, fmt.Errorf("creating the database file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	w := bufio.NewWriterSize(tmp, 1<<20)
	n, err := b.tree.WriteTo(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	return n, nil
}
