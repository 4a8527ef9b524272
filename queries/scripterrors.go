package queries

import (
	"fmt"
	"strconv"
	"strings"
)

// ScriptErrorsSince is the first beacon version that reports its own
// errors (the report's x); older scripts report none, so their runs would
// only dilute the counts.
const ScriptErrorsSince = "1.3.0"

// ScriptErrors is the section "Script errors by browser": runs of the
// report's design that the beacon script's own errors hit, by browser and
// by the stage the script was in (sql/run_facts.sql, with first contact).
// A run cut short before its first sample is never stored, so it is not
// counted.
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

// scriptVersion is a beacon version as the array its
// splitByChar('.', beacon_version) is compared with: "1.3.0" is [1, 3, 0].
func scriptVersion(v string) ([]uint32, error) {
	var out []uint32
	for _, p := range strings.Split(v, ".") {
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("beacon version %q: %w", v, err)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}
