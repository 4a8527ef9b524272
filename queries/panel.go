package queries

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/h3rum/h3rum/ingest/store/sqltext"
	"github.com/h3rum/h3rum/queries/query"
)

var (
	sqlLineComment = regexp.MustCompile(`(?m)^\s*--.*\n`)
	namedParam     = regexp.MustCompile(`@[a-z_0-9]+`)
)

// PanelSQL renders the report's query name for a tool that runs it with
// its own macros in place of the report's parameters (Grafana's
// dashboard): name is a file of sql/ ("points_rollup.sql") or a named
// block ("design key"); the shape is the world grouped by continent, the
// five-minute twins' slots and the raw edges kept (a range the tool
// chooses may start or end anywhere), run counts from the rollup's
// HyperLogLog states and the design as the parameter @design; comments are
// dropped and each @name is replaced by values[name], an error naming any
// without a value.
func PanelSQL(name string, values map[string]string) (string, error) {
	if strings.HasSuffix(name, ".sql") {
		name = "sql/" + name
	}
	s := &query.Shape{Group: query.GroupExpr("continent"), Edges: true, FineEdges: true, OneWindow: true, DesignKey: true}
	s.MergeLevels = s.Levels()
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
