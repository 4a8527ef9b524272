package queries

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon"
)

// Design is a run's test design: what a report never pools across, since
// each changes the figures (more parallel requests queue more, a bigger
// body takes longer, more warm-ups warm more, a new script measures
// differently).
type Design struct {
	Parallel    int `json:"parallel"`     // requests per batch (data-parallel)
	Bytes       int `json:"bytes"`        // probe body size (data-bytes)
	Warmup      int `json:"warmup"`       // warm-ups to the H3 origin (data-warmup)
	BeaconMajor int `json:"beacon_major"` // the script's major version
	// Extra is the design parameters the script reported beyond the first
	// three, as stored (beacon.Params.Extra: "name=value,…", defaults left
	// out), "" for none.
	Extra string `json:"extra,omitempty"`
	Set   bool   `json:"-"`             // chosen by the caller rather than the most common
	All   bool   `json:"all,omitempty"` // every design pooled, on request
}

// ParseDesign reads "parallel,bytes,warmup,major[,name=value…]" (e.g.
// "5,0,2,1", or "5,0,2,1,gap=100" with an Extra), "all", or "" (the most
// common design).
func ParseDesign(s string) (Design, error) {
	switch s = strings.TrimSpace(s); s {
	case "":
		return Design{}, nil
	case "all":
		return Design{All: true}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) < 4 {
		return Design{}, invalid("design %.40q: want parallel,bytes,warmup,major[,name=value…] (e.g. 5,0,2,1) or all", s)
	}
	var v [4]int
	for i, p := range parts[:4] {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 1<<30 {
			return Design{}, invalid("design %.40q: %q is not a count", s, p)
		}
		v[i] = n
	}
	extra := strings.Join(parts[4:], ",")
	if !validExtra(extra) || (extra == "" && len(parts) > 4) {
		return Design{}, invalid("design %.40q: want name=integer after the major version", s)
	}
	return Design{Parallel: v[0], Bytes: v[1], Warmup: v[2], BeaconMajor: v[3], Extra: extra, Set: true}, nil
}

// validExtra reports whether extra has the form of a stored Extra
// (beacon.ValidExtra: par keys and integers). Nothing else reaches the
// query text.
func validExtra(extra string) bool { return beacon.ValidExtra(extra) }

// String is the design in ParseDesign's form.
func (d Design) String() string {
	if d.All {
		return "all"
	}
	s := fmt.Sprintf("%d,%d,%d,%d", d.Parallel, d.Bytes, d.Warmup, d.BeaconMajor)
	if d.Extra != "" {
		s += "," + d.Extra
	}
	return s
}

// DesignCount is one design seen in the window and its runs.
type DesignCount struct {
	Design
	Runs int `json:"runs"`
}

// designs lists the designs of the window's runs, most runs first, exact
// counts of every browser run with parallel requests, whatever its
// exclusions: from run_counts and the window's raw edges (designsQuery),
// or from the runs table for a report from raw rows; an agent report's
// from raw rows.
func designs(ctx context.Context, conn driver.Conn, o *Options, w window) ([]DesignCount, error) {
	st, err := designsQuery(o, w)
	if err != nil {
		return nil, err
	}
	var out []DesignCount
	err = st.each(ctx, conn, "designs", func(rows driver.Rows) error {
		var (
			par, warm uint8
			bytes     uint32
			major     uint16
			extra     string
			runs      uint64
		)
		if err := rows.Scan(&par, &bytes, &warm, &major, &extra, &runs); err != nil {
			return err
		}
		out = append(out, DesignCount{Design: Design{Parallel: int(par), Bytes: int(bytes), Warmup: int(warm), BeaconMajor: int(major), Extra: extra}, Runs: int(runs)})
		return nil
	})
	return out, err
}

// designsQuery returns designs' query: designs_rollup.sql unless the
// report is from raw rows or the agent's (run_counts holds browser runs
// only).
func designsQuery(o *Options, w window) (stmt, error) {
	name := "designs_rollup.sql"
	switch {
	case o.Agent:
		name = "designs_agent.sql"
	case o.Source == SourceRaw:
		name = "designs.sql"
	}
	return prepare(name, o, w, nil)
}
