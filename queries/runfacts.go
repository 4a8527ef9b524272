package queries

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/h3rum/h3rum/queries/model"
)

func init() {
	register(section{
		name: "run_facts", part: completePart, cost: heavy,
		files: []string{"run_facts.sql", "run_facts_rollup.sql"},
		reads: []source{fromRollup, fromRunsTable},
		run: func(ctx context.Context, rep *build, conn driver.Conn) (err error) {
			rep.FirstContact, rep.ScriptErrors, err = runFacts(ctx, conn, &rep.opts, rep.win)
			return err
		},
	})
}

// runFactsQuery returns runFacts' query: for reports from the rollup,
// run_facts_rollup.sql, which reads run_fact_counts for the window's whole
// hours; else run_facts.sql.
func runFactsQuery(o *model.Options, w window) (stmt, error) {
	since, err := scriptVersion(ScriptErrorsSince)
	if err != nil {
		return stmt{}, err
	}
	name := "run_facts.sql"
	if rollupAnswers(o) && o.Source != model.SourceRaw {
		name = "run_facts_rollup.sql"
	}
	return prepare(name, o, w, nil, clickhouse.Named("script_errors_since", since))
}

// runFacts reads the two sections that come from run_facts, first contact
// and the script errors, in one pass (sql/run_facts.sql); an agent report
// has neither (the agent sends no warm-ups and runs no script), nil.
func runFacts(ctx context.Context, conn driver.Conn, o *model.Options, w window) (*model.FirstContact, *model.ScriptErrors, error) {
	if o.Agent {
		return nil, nil, nil
	}
	st, err := runFactsQuery(o, w)
	if err != nil {
		return nil, nil, err
	}
	// A row per group × browser: each run counted once, summed here by
	// group and by browser for first contact, by browser for the errors.
	groups, browsers := map[string]*model.FirstContactCount{}, map[string]*model.FirstContactCount{}
	sum := func(m map[string]*model.FirstContactCount, key string, n []uint64) {
		c := m[key]
		if c == nil {
			c = &model.FirstContactCount{Group: key}
			m[key] = c
		}
		c.Runs += int(n[0])
		c.NotMeasured += int(n[1])
		c.H3First += int(n[2])
		c.Upgraded += int(n[3])
		c.Never += int(n[4])
	}
	errs := map[string]*model.BrowserScriptErrors{}
	err = st.each(ctx, conn, "first contact and script errors", func(rows driver.Rows) error {
		var (
			grp, browser string
			n            [12]uint64 // fc_runs … fc_never, se_runs … se_send
		)
		if err := rows.Scan(&grp, &browser, &n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6], &n[7], &n[8], &n[9], &n[10], &n[11]); err != nil {
			return err
		}
		if n[0] > 0 {
			sum(groups, grp, n[:5])
			sum(browsers, browser, n[:5])
		}
		if n[5] > 0 {
			b := errs[browser]
			if b == nil {
				b = &model.BrowserScriptErrors{Browser: browser}
				errs[browser] = b
			}
			b.Runs += int(n[5])
			b.RunsWithErrors += int(n[6])
			b.Idle += int(n[7])
			b.Warmup += int(n[8])
			b.Batch += int(n[9])
			b.Timing += int(n[10])
			b.Send += int(n[11])
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	fc := &model.FirstContact{By: o.By, Groups: model.FirstContactCounts(groups), Browsers: model.FirstContactCounts(browsers)}
	se := &model.ScriptErrors{SinceBeacon: ScriptErrorsSince, Browsers: make([]model.BrowserScriptErrors, 0, len(errs))}
	for _, b := range errs {
		se.Browsers = append(se.Browsers, *b)
	}
	slices.SortFunc(se.Browsers, func(a, b model.BrowserScriptErrors) int {
		return cmp.Or(cmp.Compare(b.Runs, a.Runs), strings.Compare(a.Browser, b.Browser))
	})
	return fc, se, nil
}
