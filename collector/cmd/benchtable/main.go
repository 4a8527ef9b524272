// Command benchtable collects what `make bench` measured: every result in
// Go's benchmark format from the given files (the Go benchmarks' own
// lines, and those benchprobe and benchreport print), as one table on
// stdout and, with -json, as a JSON file under var/bench/ that a later run
// can be compared with (make bench-compare, which runs benchstat on the
// text files).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchfmt"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// Result is one benchmark result: its full name, iterations and every
// value by unit.
type Result struct {
	Name       string             `json:"name"`
	Iterations int                `json:"iterations"`
	Values     map[string]float64 `json:"values"`
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.String("json", "", "also write the results as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("usage: benchtable [-json out.json] bench-output.txt…")
	}
	var results []Result
	for _, name := range fs.Args() {
		rs, err := read(name)
		if err != nil {
			return err
		}
		results = append(results, rs...)
	}
	if len(results) == 0 {
		return fmt.Errorf("no benchmark results in %s", strings.Join(fs.Args(), ", "))
	}
	write(stdout, results)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", *jsonOut, err)
		}
	}
	return nil
}

// read parses the benchmark results in a file; other lines (tables, logs)
// are skipped.
func read(name string) ([]Result, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Result
	r := benchfmt.NewReader(f, name)
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue // a syntax error or a unit line: not a result
		}
		v := Result{Name: string(res.Name), Iterations: res.Iters, Values: map[string]float64{}}
		for _, val := range res.Values {
			v.Values[val.Unit] = val.Value
		}
		out = append(out, v)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return out, nil
}

// write prints one row per result and value; ratios (units ending in
// "ratio") first within a result, as they are what a change is judged by.
func write(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tvalue\tunit\t")
	for _, r := range results {
		units := make([]string, 0, len(r.Values))
		for u := range r.Values {
			units = append(units, u)
		}
		slices.SortFunc(units, func(a, b string) int {
			ra, rb := strings.HasSuffix(a, "ratio"), strings.HasSuffix(b, "ratio")
			if ra != rb {
				if ra {
					return -1
				}
				return 1
			}
			return strings.Compare(a, b)
		})
		for i, u := range units {
			name := r.Name
			if i > 0 {
				name = ""
			}
			fmt.Fprintf(tw, "%s\t%.4g\t%s\t\n", name, r.Values[u], u)
		}
	}
	tw.Flush()
}
