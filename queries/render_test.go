package queries_test

import (
	"bytes"

	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/render"
)

func init() {
	queries.SetOutputs(queries.Outputs{
		Table: render.Table,
		CSV:   render.CSV,
		HTML:  render.HTML,
		Dashboard: func(r *model.Report, o *model.Options, live bool) ([]byte, error) {
			var b bytes.Buffer
			err := render.NewDashboard(r, o, live).Write(&b)
			return b.Bytes(), err
		},
		JSON:             render.JSON,
		CSVHeader:        render.CSVHeader,
		InsufficientMark: render.InsufficientMark,
	})
}
