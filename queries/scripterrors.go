package queries

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// ScriptErrorsSince is the first beacon version that reports its own
// errors (the report's x); older scripts report none, so their runs would
// only dilute the counts.
const ScriptErrorsSince = "1.3.0"

// ScriptErrors is the section "Script errors by browser": runs of the
// report's design that the beacon script's own errors hit, by browser and
// by the stage the script was in (sql/script_errors.sql). A run cut short
// before its first sample is never stored, so it is not counted.
type ScriptErrors struct {
	SinceBeacon string                `json:"since_beacon"` // ScriptErrorsSince: the runs of older scripts are left out
	Browsers    []BrowserScriptErrors `json:"browsers"`     // most runs first, then by name
}

// BrowserScriptErrors is one browser's runs and the script errors in them,
// summed over its runs by stage (beacon.ScriptErrors' kinds).
type BrowserScriptErrors struct {
	Browser        string `json:"browser"` // "unknown" when the collector could not tell
	Runs           int    `json:"runs"`
	RunsWithErrors int    `json:"runs_with_errors"` // runs with at least one script error of any kind
	Idle           int    `json:"idle"`             // starting the run's sequence of requests
	Warmup         int    `json:"warmup"`           // a warm-up request
	Batch          int    `json:"batch"`            // a parallel request
	Timing         int    `json:"timing"`           // reading a Resource Timing entry
	Send           int    `json:"send"`             // building or sending the report
}

// scriptErrors reads the section; an agent report has none (the agent
// runs no script), nil.
func scriptErrors(ctx context.Context, conn driver.Conn, o *Options, w window) (*ScriptErrors, error) {
	if o.Agent {
		return nil, nil
	}
	byBrowser := *o
	byBrowser.By = "browser"
	q, err := query("script_errors.sql", &byBrowser)
	if err != nil {
		return nil, err
	}
	since, err := versionSQL(ScriptErrorsSince)
	if err != nil {
		return nil, err
	}
	q = strings.Replace(q, "/*SINCE*/", since, 1)
	se := &ScriptErrors{SinceBeacon: ScriptErrorsSince, Browsers: []BrowserScriptErrors{}}
	args := []any{w.since, w.until, o.Site, o.Site, b01(o.IncludeBots)}
	err = eachRowOf(ctx, conn, q, args, "script errors", func(rows driver.Rows) error {
		var (
			b BrowserScriptErrors
			n [7]uint64
		)
		if err := rows.Scan(&b.Browser, &n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6]); err != nil {
			return err
		}
		b.Runs, b.RunsWithErrors = int(n[0]), int(n[1])
		b.Idle, b.Warmup, b.Batch, b.Timing, b.Send = int(n[2]), int(n[3]), int(n[4]), int(n[5]), int(n[6])
		se.Browsers = append(se.Browsers, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return se, nil
}

// versionSQL is a beacon version as the SQL array literal its
// splitByChar('.', beacon_version) is compared with: "1.3.0" is [1, 3, 0].
func versionSQL(v string) (string, error) {
	parts := strings.Split(v, ".")
	for _, p := range parts {
		if _, err := strconv.ParseUint(p, 10, 32); err != nil {
			return "", fmt.Errorf("beacon version %q: %w", v, err)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]", nil
}
