package queries

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

// tableSource is the kind of source each table the query files read is.
var tableSource = map[string]source{
	"samples": fromRaw, "samples_rollup": fromRollup, "run_counts": fromRollup, "failure_counts": fromRollup,
	"itt_rollup": fromRollup, "handshake_rollup": fromRollup, "handshake_requests": fromRollup, "run_fact_counts": fromRollup, "runs": fromRunsTable, "runs_by_id": fromRunsTable, "run_facts": fromRunsTable,
	"nel_reports": fromNEL,
}

// TestSectionsDeclareTheirFiles: every query file but the shared blocks
// and the designs (which begin reads to choose the report's design)
// belongs to a registered section, each section's files exist, and the
// tables they read, in every branch, are the sources it declares.
func TestSectionsDeclareTheirFiles(t *testing.T) {
	files, err := fs.Glob(sqlFiles, "sql/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	owned := map[string]bool{"blocks.sql": true, "designs.sql": true, "designs_rollup.sql": true, "designs_agent.sql": true}
	from := regexp.MustCompile(`(?i)\b(?:FROM|JOIN)\s+([a-z_]+)`)
	at := func(h, m int) time.Time { return time.Date(2025, 1, 1, h, m, 0, 0, time.UTC) }
	w := query.NewWindow(at(0, 30), at(5, 15), at(9, 0))
	extra := []any{clickhouse.Named("groups", []string{}), clickhouse.Named("bounds", []uint64{}), clickhouse.Named("bound", boundID(0))}
	names := map[string]bool{}
	parts := map[part]int{}
	for _, sec := range registered {
		if names[sec.name] {
			t.Errorf("two sections named %s", sec.name)
		}
		names[sec.name] = true
		parts[sec.part]++
		read := map[source]bool{}
		for _, f := range sec.files {
			owned[f] = true
			for _, runsTable := range []bool{false, true} {
				st, err := prepare(f, &model.Options{By: "continent"}, w, func(s *query.Shape) { s.RunsTable = runsTable }, extra...)
				if err != nil {
					t.Fatalf("section %s: %v", sec.name, err)
				}
				for _, m := range from.FindAllStringSubmatch(st.SQL, -1) {
					if src, ok := tableSource[m[1]]; ok {
						read[src] = true
					}
				}
			}
		}
		var got []source
		for src := range read {
			got = append(got, src)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(sec.reads))
		if !slices.Equal(got, want) {
			t.Errorf("section %s reads %v, declares %v", sec.name, got, want)
		}
	}
	for _, f := range files {
		if name := strings.TrimPrefix(f, "sql/"); !owned[name] {
			t.Errorf("%s belongs to no section", name)
		}
	}
	if parts[estimatePart] < 2 || parts[runsPart] != 1 || parts[completePart] == 0 {
		t.Errorf("sections by part: %v; the estimate needs the points and the timeline, the bootstrap is one section", parts)
	}
	if first := registered[slices.IndexFunc(registered, func(s section) bool { return s.part == estimatePart })]; first.name != "points" {
		t.Errorf("the first section of the estimate is %s; Run starts the bootstrap's lane with the points", first.name)
	}
}

// TestLanesDealHeavySectionsApart: no lane gets a second heavy section
// while the other has fewer, and every section lands in one lane.
func TestLanesDealHeavySectionsApart(t *testing.T) {
	var secs []section
	for _, s := range registered {
		if s.part == completePart {
			secs = append(secs, s)
		}
	}
	a, b := lanes(secs)
	heavies := func(l []section) (n int) {
		for _, s := range l {
			if s.cost == heavy {
				n++
			}
		}
		return n
	}
	if ha, hb := heavies(a), heavies(b); ha-hb > 1 || hb-ha > 1 {
		t.Errorf("heavy sections %d and %d", ha, hb)
	}
	if len(a)+len(b) != len(secs) || len(a)-len(b) > 1 || len(b)-len(a) > 1 {
		t.Errorf("lanes of %d and %d sections for %d", len(a), len(b), len(secs))
	}
}
