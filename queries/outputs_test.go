package queries

import (
	"io"

	"github.com/h3rum/h3rum/queries/model"
)

// The outputs live in queries/render, which imports this package: the
// tests here that also read a report's outputs (the table and the CSV
// agree with the model, the dashboard shows a section) reach them through
// these, which render_test.go (package queries_test, which may import
// render) sets with SetOutputs before any test runs.
var (
	writeTable       func(io.Writer, *model.Report) error
	writeCSV         func(io.Writer, *model.Report) error
	writeHTML        func(io.Writer, *model.Report, ...*model.Report) error
	renderDashboard  func(*model.Report, *model.Options, bool) ([]byte, error)
	encodeJSON       func(any) ([]byte, error)
	csvHeader        []string
	insufficientMark string
)

// Outputs are queries/render's functions and constants the tests use.
type Outputs struct {
	Table, CSV       func(io.Writer, *model.Report) error
	HTML             func(io.Writer, *model.Report, ...*model.Report) error
	Dashboard        func(*model.Report, *model.Options, bool) ([]byte, error)
	JSON             func(any) ([]byte, error)
	CSVHeader        []string
	InsufficientMark string
}

// SetOutputs sets what the tests call the outputs by.
func SetOutputs(o Outputs) {
	writeTable, writeCSV, writeHTML, renderDashboard, encodeJSON = o.Table, o.CSV, o.HTML, o.Dashboard, o.JSON
	csvHeader, insufficientMark = o.CSVHeader, o.InsufficientMark
}

// pctl is the value at percentile p of ps, 0 when ps lacks it.
func pctl(ps []model.Percentile, p float64) float64 {
	for _, x := range ps {
		if x.P == p {
			return x.MS
		}
	}
	return 0
}
