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

// designKeySQL is the design of a row of any table keyed by it, in
// ParseDesign's form.
const designKeySQL = "concat(toString(param_parallel), ',', toString(param_bytes), ',', toString(param_warmup), ',', toString(beacon_major), " +
	"if(param_extra = '', '', concat(',', param_extra)))"

// sql is the design as a condition on the columns every table keyed by it
// has. Only integers and an Extra of checked parts (ParseDesign, or read
// from the tables) reach the query text.
func (d Design) sql() string {
	if d.All {
		return "1"
	}
	if !validExtra(d.Extra) {
		return "0" // no run stores such an Extra
	}
	return fmt.Sprintf("(param_parallel = %d AND param_bytes = %d AND param_warmup = %d AND beacon_major = %d AND param_extra = '%s')",
		d.Parallel, d.Bytes, d.Warmup, d.BeaconMajor, d.Extra)
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
	name, q, args, err := designsQuery(o, w)
	if err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing designs (%s): %w", name, err)
	}
	defer rows.Close()
	var out []DesignCount
	for rows.Next() {
		var (
			par, warm uint8
			bytes     uint32
			major     uint16
			extra     string
			runs      uint64
		)
		if err := rows.Scan(&par, &bytes, &warm, &major, &extra, &runs); err != nil {
			return nil, fmt.Errorf("listing designs: %w", err)
		}
		out = append(out, DesignCount{Design: Design{Parallel: int(par), Bytes: int(bytes), Warmup: int(warm), BeaconMajor: int(major), Extra: extra}, Runs: int(runs)})
	}
	return out, rows.Err()
}

// designsQuery returns the designs' SQL, its name in errors and its
// parameters: designs_rollup.sql unless the report is from raw rows or
// the agent's (run_counts holds browser runs only).
func designsQuery(o *Options, w window) (name, q string, args []any, err error) {
	name = "designs_rollup.sql"
	switch {
	case o.Agent:
		name = "designs_agent.sql"
	case o.Source == SourceRaw:
		name = "designs.sql"
	}
	b, err := sqlFiles.ReadFile("sql/" + name)
	if err != nil {
		return name, "", nil, fmt.Errorf("reading embedded %s: %w", name, err)
	}
	q = strings.ReplaceAll(selections.Replace(string(b)), "/*PLACE*/", o.placeCond())
	if name != "designs_rollup.sql" {
		return name, q, []any{w.since, w.until, o.Site, o.Site}, nil
	}
	return withEdges(name, q, w, nil, []any{o.Site, o.Site})
}
