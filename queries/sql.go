package queries

import (
	"embed"
	"text/template"

	"github.com/h3rum/h3rum/ingest/store/sqltext"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
	"github.com/h3rum/h3rum/queries/stats"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// sqlTemplates is every query file, parsed once: sql/blocks.sql defines
// the blocks the others share (the selections, the design, the place).
var sqlTemplates = template.Must(sqltext.Parse(sqlFiles, "sql/*.sql"))

// percentiles are those reported for every protocol, in percent: the one list,
// stats.Percentiles, which the SQL files take as .Levels (query.Shape).
var percentiles = stats.Percentiles

// prepare renders the query file name (in sql/) for o over w
// (query.Prepare): the sections' files live beside the sections.
func prepare(name string, o *model.Options, w query.Window, adjust func(*query.Shape), extra ...any) (query.Stmt, error) {
	return query.Prepare(sqlTemplates, name, o, w, adjust, extra...)
}
