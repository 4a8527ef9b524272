package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestReportFlagSpellings: every name a report option has had on the
// command line is a flag of report, the API's earlier parameter names are
// not (nor read from the environment: H3RUM_WARMUP is the agent's); a bad value is a
// usage error (exit 2) of one line naming the flag, before any store is
// opened.
func TestReportFlagSpellings(t *testing.T) {
	report := func(t *testing.T, env map[string]string, args ...string) (int, string) {
		t.Helper()
		for k, v := range env {
			t.Setenv(k, v)
		}
		var errOut bytes.Buffer
		err := run(context.Background(), append([]string{"report", "--clickhouse", "clickhouse://127.0.0.1:1/none"}, args...), io.Discard, &errOut)
		return exitCode(err, &errOut), strings.TrimSpace(errOut.String())
	}
	// Options read, the bad --format is the only complaint.
	for _, args := range [][]string{
		{"--include-warmup", "--include-failed", "--include-bots", "--include-excluded", "--raw", "--min-runs", "10", "--verdict-p", "50", "--effect-ms", "5"},
		{"--source", "raw"},
		{"--since", "2d", "--until", "1d", "--site", "shop", "--by", "country", "--design", "5,0,2,1", "--agent", "--replicates", "100", "--headline"},
		{"--continent", "eu", "--country", "fr", "--baseline-since", "9d", "--baseline-until", "8d"},
	} {
		if code, msg := report(t, nil, append(args, "--format", "xml")...); code != 2 || msg != `h3rum: --format "xml": want table, json, csv or html` {
			t.Errorf("report %v: exit %d, %q; want only the format refused", args, code, msg)
		}
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--since", "soon"}, `h3rum: --since "soon": cannot parse time "soon"`},
		{nil, []string{"--bots"}, `flag provided but not defined: -bots`},
		{nil, []string{"--min_runs", "5"}, `flag provided but not defined: -min_runs`},
		{map[string]string{"H3RUM_WARMUP": "2", "H3RUM_BOTS": "x"}, nil, `h3rum: --format "xml"`}, // the agent's variable, an alias's name: not read
		{nil, []string{"--include-bots=maybe"}, `h3rum: --include-bots "maybe": not a boolean`},
		{nil, []string{"--raw", "--source", "rollup"}, "are one option: give one"}, // refused, not one of them dropped
		{nil, []string{"--design", "5,0,2"}, `h3rum: --design "5,0,2": design "5,0,2": want parallel,bytes,warmup,major`},
		{nil, []string{"--by", "planet"}, `unknown grouping "planet"`},
		{map[string]string{"H3RUM_MIN_RUNS": "many"}, nil, `h3rum: --min-runs "many": not an integer`},
		{map[string]string{"H3RUM_VERDICT_P": "42"}, nil, "verdict percentile 42 is not one of the report's"},
		{map[string]string{"H3RUM_INCLUDE_BOTS": "maybe"}, []string{"--include-bots"}, `h3rum: --format "xml"`}, // the command line wins
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, msg := report(t, tc.env, append(tc.args, "--format", "xml")...)
			if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("report %v %v: exit %d, %q; want 2 and one line with %q", tc.env, tc.args, code, msg, tc.want)
			}
		})
	}
}
