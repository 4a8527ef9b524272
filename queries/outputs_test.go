package queries

import "io"

// The outputs live in queries/render, which imports this package: the
// tests here that also read a report's outputs (the table and the CSV
// agree with the model, the dashboard shows a section) reach them through
// these, which render_test.go (package queries_test, which may import
// render) sets with SetOutputs before any test runs.
var (
	writeTable       func(io.Writer, *Report) error
	writeCSV         func(io.Writer, *Report) error
	writeHTML        func(io.Writer, *Report, ...*Report) error
	renderDashboard  func(*Report, *Options, bool) ([]byte, error)
	encodeJSON       func(any) ([]byte, error)
	csvHeader        []string
	insufficientMark string
)

// Outputs are queries/render's functions and constants the tests use.
type Outputs struct {
	Table, CSV       func(io.Writer, *Report) error
	HTML             func(io.Writer, *Report, ...*Report) error
	Dashboard        func(*Report, *Options, bool) ([]byte, error)
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
func pctl(ps []Percentile, p float64) float64 {
	for _, x := range ps {
		if x.P == p {
			return x.MS
		}
	}
	return 0
}
