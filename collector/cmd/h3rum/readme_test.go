package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/collector/origin"
	"github.com/h3rum/h3rum/ingest"
	"github.com/h3rum/h3rum/queries/api"
)

// The README states limits and timeouts that flags and package constants
// define; it must state the ones the code has. Every "`--flag` (value"
// naming a serve flag is checked against the flag's default, and the
// limits without a flag against their constants.
func TestReadmeStatesTheDefaults(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ") // lines rewrap freely
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c serveFlags
	c.register(fs)
	mention := regexp.MustCompile("`--([a-z0-9-]+)` \\(([0-9][0-9.]*) ?(µs|ms|s|KiB|MiB)?")
	checked := 0
	for _, m := range mention.FindAllStringSubmatch(readme, -1) {
		f := fs.Lookup(m[1])
		if f == nil {
			continue // another command's flag
		}
		checked++
		if got, want := readmeValue(m[2], m[3]), flagValue(f); got != want {
			t.Errorf("README: `--%s` (%s %s): the default is %s (%v)", m[1], m[2], m[3], f.DefValue, want)
		}
	}
	if checked < 10 {
		t.Errorf("README: checked %d flag defaults, want at least 10: has the wording changed?", checked)
	}
	for _, phrase := range []string{
		fmt.Sprintf("`--ingest-concurrency` slots (503 with `Retry-After` after %s)", readmeDuration(ingest.DefaultConcurrencyWait)),
		fmt.Sprintf("(others wait %s, then 503 with `Retry-After`)", readmeDuration(api.DefaultQueueWait)),
		fmt.Sprintf("idle connections close after %s", readmeDuration(origin.DefaultIdleTimeout)),
	} {
		if !strings.Contains(readme, phrase) {
			t.Errorf("README does not say %q", phrase)
		}
	}
}

// readmeValue is a README value as a number in the flag's own unit
// (durations in nanoseconds, sizes in bytes).
func readmeValue(num, unit string) float64 {
	v, _ := strconv.ParseFloat(num, 64)
	switch unit {
	case "µs":
		v *= float64(time.Microsecond)
	case "ms":
		v *= float64(time.Millisecond)
	case "s":
		v *= float64(time.Second)
	case "KiB":
		v *= 1 << 10
	case "MiB":
		v *= 1 << 20
	}
	return v
}

func flagValue(f *flag.Flag) float64 {
	if d, err := time.ParseDuration(f.DefValue); err == nil {
		return float64(d)
	}
	v, _ := strconv.ParseFloat(f.DefValue, 64)
	if strings.Contains(f.Usage, "`seconds`") {
		v *= float64(time.Second)
	}
	return v
}

// readmeDuration writes d as the README does: "2 s", "500 µs".
func readmeDuration(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%d ms", d/time.Millisecond)
	}
	return fmt.Sprintf("%d µs", d/time.Microsecond)
}
