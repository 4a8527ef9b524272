package queries

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
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
func runFactsQuery(o *model.Options, w query.Window) (query.Stmt, error) {
	since, err := scriptVersion(ScriptErrorsSince)
	if err != nil {
		return query.Stmt{}, err
	}
	name := "run_facts.sql"
	if query.RollupAnswers(o) && o.Source != model.SourceRaw {
		name = "run_facts_rollup.sql"
	}
	return prepare(name, o, w, nil, clickhouse.Named("script_errors_since", since))
}

// runFacts reads the two sections that come from run_facts, first contact
// and the script errors, in one pass (sql/run_facts.sql); an agent report
// has neither (the agent sends no warm-ups and runs no script), nil.
func runFacts(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window) (*model.FirstContact, *model.ScriptErrors, error) {
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
		c.KnownBefore += int(n[3])
		c.FromPage += int(n[4])
		c.Upgraded += int(n[5])
		c.Never += int(n[6])
	}
	errs := map[string]*model.BrowserScriptErrors{}
	err = st.Each(ctx, conn, "first contact and script errors", func(rows driver.Rows) error {
		var (
			grp, browser string
			n            [14]uint64 // fc_runs … fc_never, se_runs … se_send
		)
		targets := []any{&grp, &browser}
		for i := range n {
			targets = append(targets, &n[i])
		}
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		if n[0] > 0 {
			sum(groups, grp, n[:7])
			sum(browsers, browser, n[:7])
		}
		if e := n[7:]; e[0] > 0 {
			b := errs[browser]
			if b == nil {
				b = &model.BrowserScriptErrors{Browser: browser}
				errs[browser] = b
			}
			b.Runs += int(e[0])
			b.RunsWithErrors += int(e[1])
			b.Idle += int(e[2])
			b.Warmup += int(e[3])
			b.Batch += int(e[4])
			b.Timing += int(e[5])
			b.Send += int(e[6])
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
