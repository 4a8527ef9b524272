package queries

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store/sqltext"
	"github.com/h3rum/h3rum/queries/model"
)

// TestQueryFilesBindByName renders every query file for reports that
// between them take each of its branches and checks that the SQL names
// its values only as parameters that params binds: no "?", no marker, and
// none of the values the request chose (a site, a place, a design's
// Extra) in the text.
func TestQueryFilesBindByName(t *testing.T) {
	files, err := fs.Glob(sqlFiles, "sql/*.sql")
	if err != nil || len(files) < 30 {
		t.Fatalf("%d query files, %v", len(files), err)
	}
	at := func(h, m int) time.Time { return time.Date(2025, 1, 1, h, m, 0, 0, time.UTC) }
	chosen := []string{"evil.example", "ZQ", "QZ", "gap=7777"}
	reports := []model.Options{
		{By: "continent"},
		{By: "country", Site: "evil.example", Continent: "ZQ", Country: "QZ", Design: model.Design{Parallel: 5, Warmup: 1, BeaconMajor: 1, Extra: "gap=7777", Set: true}},
		{By: "collector", IncludeFailed: true, IncludeExcluded: true, IncludeWarmup: true, IncludeBots: true, Agent: true},
		{By: "none", Design: model.Design{All: true}},
	}
	extra := []any{clickhouse.Named("groups", []string{"EU"}), clickhouse.Named("bounds", []uint64{1}), clickhouse.Named("bound", boundID(1)),
		clickhouse.Named("min_sampling_fraction", 0.5), clickhouse.Named("script_errors_since", []uint32{1, 3})}
	named := regexp.MustCompile(`@[a-z_0-9]+`)
	for _, w := range []window{newWindow(at(1, 0), at(5, 0), at(9, 0)), newWindow(at(0, 30), at(5, 15), at(9, 0))} {
		for _, o := range reports {
			for _, f := range files {
				name := strings.TrimPrefix(f, "sql/")
				for _, oneWindow := range []bool{false, true} {
					st, err := prepare(name, &o, w, func(s *shape) { s.OneWindow, s.GridLevels = oneWindow, "0.5" }, extra...)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if err := sqltext.Check(name, st.sql); err != nil {
						t.Error(err)
					}
					bound := map[string]bool{}
					for _, a := range st.args {
						bound["@"+a.(driver.NamedValue).Name] = true
					}
					for _, p := range named.FindAllString(st.sql, -1) {
						if !bound[p] {
							t.Errorf("%s names %s, which params does not bind", name, p)
						}
					}
					for _, v := range chosen {
						if strings.Contains(st.sql, v) {
							t.Errorf("%s holds %q, a value the request chose:\n%s", name, v, st.sql)
						}
					}
				}
			}
		}
	}
}

// A window that runs to the present takes its current hour from the
// rollup, which holds no row after now; one that ended in the past reads
// its last partial hour from raw rows.
func TestNewWindowCurrentHour(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2025, 1, 1, h, m, 0, 0, time.UTC) }
	u := func(t time.Time) uint32 { return uint32(t.Unix()) }
	for _, tc := range []struct {
		name              string
		since, until, now time.Time
		want              window
	}{
		{"to the present", at(0, 30), at(5, 15), at(5, 14),
			window{u(at(0, 30)), u(at(5, 15)), u(at(1, 0)), u(at(6, 0)), u(at(0, 30)), u(at(1, 0)), u(at(5, 15)), u(at(5, 15))}},
		{"into the future", at(0, 30), at(5, 15), at(3, 0),
			window{u(at(0, 30)), u(at(5, 15)), u(at(1, 0)), u(at(6, 0)), u(at(0, 30)), u(at(1, 0)), u(at(5, 15)), u(at(5, 15))}},
		{"ended before now", at(0, 30), at(5, 15), at(5, 16),
			window{u(at(0, 30)), u(at(5, 15)), u(at(1, 0)), u(at(5, 0)), u(at(0, 30)), u(at(1, 0)), u(at(5, 0)), u(at(5, 15))}},
		{"whole hours to the present", at(1, 0), at(5, 0), at(5, 0),
			window{u(at(1, 0)), u(at(5, 0)), u(at(1, 0)), u(at(5, 0)), u(at(1, 0)), u(at(1, 0)), u(at(5, 0)), u(at(5, 0))}},
		{"within the current hour", at(5, 10), at(5, 50), at(5, 40),
			window{u(at(5, 10)), u(at(5, 50)), u(at(5, 10)), u(at(5, 10)), u(at(5, 10)), u(at(5, 50)), u(at(5, 50)), u(at(5, 50))}},
	} {
		if got := newWindow(tc.since, tc.until, tc.now); got != tc.want {
			t.Errorf("%s: window %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
