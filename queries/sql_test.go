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
	"github.com/h3rum/h3rum/queries/query"
)

// TestQueryFilesBindByName renders every query file for reports that
// between them take each of its branches and checks that the SQL names
// its values only as parameters that query.Prepare binds: no "?", no marker, and
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
	for _, w := range []query.Window{query.NewWindow(at(1, 0), at(5, 0), at(9, 0)), query.NewWindow(at(0, 30), at(5, 15), at(9, 0))} {
		for _, o := range reports {
			for _, f := range files {
				name := strings.TrimPrefix(f, "sql/")
				for _, oneWindow := range []bool{false, true} {
					st, err := prepare(name, &o, w, func(s *query.Shape) { s.OneWindow, s.GridLevels = oneWindow, "0.5" }, extra...)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if err := sqltext.Check(name, st.SQL); err != nil {
						t.Error(err)
					}
					bound := map[string]bool{}
					for _, a := range st.Args {
						bound["@"+a.(driver.NamedValue).Name] = true
					}
					for _, p := range named.FindAllString(st.SQL, -1) {
						if !bound[p] {
							t.Errorf("%s names %s, which query.Prepare does not bind", name, p)
						}
					}
					for _, v := range chosen {
						if strings.Contains(st.SQL, v) {
							t.Errorf("%s holds %q, a value the request chose:\n%s", name, v, st.SQL)
						}
					}
				}
			}
		}
	}
}
