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
