package queries

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/h3rum/h3rum/ingest/store/sqltext"
)

// What the outputs (queries/render) and the server (queries/api) need of
// this package's internals, exported here and nowhere else so that the
// list stays short and in one place: each is a one-line accessor over an
// unexported name that the computation keeps using.

// Complete reports whether r is a complete report (Run, or Estimate then
// AddRuns): intervals and the paired view are in.
func (r *Report) Complete() bool { return r.done }

// Options returns the options r was computed with, defaults resolved.
func (r *Report) Options() Options { return r.opts }

// Query is o as URL parameters, the inverse of OptionsFromValues: the
// dashboard's links to itself with other options.
func (o *Options) Query() string { return o.values().Encode() }

// VerdictPercentile is the percentile the verdicts of o's report judge,
// its default resolved.
func (o *Options) VerdictPercentile() float64 { return o.verdictRule().withDefaults().P }

// OutcomeStats is one outcome of a group and its figures (Stats is nil
// when the group has no such sample).
type OutcomeStats struct {
	Outcome string // OutcomeH2, …
	Stats   *Stats
}

// Outcomes lists g's outcomes in the report's order.
func (g *Group) Outcomes() []OutcomeStats {
	var list []OutcomeStats
	for _, o := range g.outcomes() {
		list = append(list, OutcomeStats{o.key, o.s})
	}
	return list
}

// CheckFinite returns an error naming the first NaN or infinity in v by
// its JSON path, or nil: JSON has no such numbers, so a report is checked
// before it is answered or written.
func CheckFinite(v any) error { return checkFinite(v) }

// IsPlaceCode reports whether s is two ASCII capital letters, the form of
// every continent and country code the collector stores.
func IsPlaceCode(s string) bool { return isPlaceCode(s) }

// SufficiencyText states the rule for an interval at a percentile and
// what each percentile needs ("runs × (1 − p) ≥ 10: p50 20 runs, …").
func SufficiencyText() string { return sufficiencyText() }

// GroupDigits writes a count with its digits in groups of three, as the
// verdicts' sentences do (4 210, 12 500).
func GroupDigits(n int) string { return groupDigits(n) }

var (
	sqlLineComment = regexp.MustCompile(`(?m)^\s*--.*\n`)
	namedParam     = regexp.MustCompile(`@[a-z_0-9]+`)
)

// PanelSQL renders the report's query name for a tool that runs it with
// its own macros in place of the report's parameters (Grafana's
// dashboard): name is a file of sql/ ("points_rollup.sql") or a named
// block ("design key"); the shape is the world grouped by continent, the
// raw edges kept, run counts from the rollup's HyperLogLog states and the
// design as the parameter @design; comments are dropped and each @name is
// replaced by values[name], an error naming any without a value.
func PanelSQL(name string, values map[string]string) (string, error) {
	if strings.HasSuffix(name, ".sql") {
		name = "sql/" + name
	}
	s := &shape{Group: groupExpr["continent"], Edges: true, MergeLevels: levelsSQL, OneWindow: true, RunsTable: true, DesignKey: true}
	q, err := sqltext.Render(sqlTemplates, name, s)
	if err != nil {
		return "", err
	}
	q = sqlLineComment.ReplaceAllString(q+"\n", "")
	var unbound []string
	q = namedParam.ReplaceAllStringFunc(q, func(p string) string {
		v, ok := values[p[1:]]
		if !ok {
			unbound = append(unbound, p)
		}
		return v
	})
	if len(unbound) > 0 {
		return "", fmt.Errorf("%s binds %s, which no value is given for", strings.TrimPrefix(name, "sql/"), strings.Join(unbound, ", "))
	}
	return strings.TrimSpace(q), nil
}
