package render

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/h3rum/h3rum/queries/model"
)

// CSVHeader is the header row of CSV: one figure per row ("tidy"
// data). measure is duration_ms, diff_ms, diff_pct, paired_median_ms,
// paired_p90_ms, paired_h3_won_share, paired_h3_tie_share, paired_h3_lost_share, paired_median_ms_by_order
// (outcome: the batch order), h3_availability, itt_ms and itt_run_failure_rate (outcome: the
// origin; intention to treat), failures, or first_contact_share and
// first_contact_runs (firstContactCSV); p is
// the percentile where one applies; insufficient is true or false for
// percentiles and differences (too few runs for an interval: ci_low and
// ci_high empty) and empty for the other measures. A group or outcome
// that a spreadsheet would take for a formula is written with a leading
// single quote (csvText).
var CSVHeader = []string{"group", "too_small", "measure", "outcome", "p", "value", "ci_low", "ci_high", "runs", "samples", "insufficient"}

// CSV writes r as CSV with CSVHeader's columns.
func CSV(w io.Writer, r *model.Report) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	fp := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		small := strconv.FormatBool(g.TooSmall)
		// rowIns writes a percentile or a difference, row the rest.
		rowIns := func(measure, outcome, p, value, lo, hi string, runs, samples int, insufficient string) {
			cw.Write([]string{csvText(g.Group), small, measure, csvText(outcome), p, value, lo, hi, strconv.Itoa(runs), strconv.Itoa(samples), insufficient})
		}
		row := func(measure, outcome, p, value, lo, hi string, runs, samples int) {
			rowIns(measure, outcome, p, value, lo, hi, runs, samples, "")
		}
		b := strconv.FormatBool
		for _, o := range g.Outcomes() {
			if o.Stats == nil {
				continue
			}
			for _, p := range o.Stats.Percentiles {
				rowIns("duration_ms", o.Outcome, f(p.P), f(p.MS), fp(p.CILowMS), fp(p.CIHighMS), o.Stats.Runs, o.Stats.Samples, b(p.Insufficient))
			}
		}
		for _, d := range g.Diff {
			rowIns("diff_ms", "h3-h2", f(d.P), f(d.MS), fp(d.CILowMS), fp(d.CIHighMS), 0, 0, b(d.Insufficient))
		}
		for _, d := range g.Diff {
			rowIns("diff_pct", "h3-h2", f(d.P), f(d.Pct), fp(d.CILowPct), fp(d.CIHighPct), 0, 0, b(d.Insufficient))
		}
		if p := g.Paired; p != nil {
			row("paired_median_ms", "h3-h2", "50", f(p.MedianMS), fp(p.MedianCILowMS), fp(p.MedianCIHighMS), p.Runs, 0)
			row("paired_p90_ms", "h3-h2", "90", f(p.P90MS), fp(p.P90CILowMS), fp(p.P90CIHighMS), p.Runs, 0)
			row("paired_h3_won_share", "h3-h2", "", f(p.H3WonShare), fp(p.H3WonCILow), fp(p.H3WonCIHigh), p.Runs, 0)
			row("paired_h3_tie_share", "h3-h2", "", f(p.H3TieShare), "", "", p.Runs, 0)
			row("paired_h3_lost_share", "h3-h2", "", f(p.H3LostShare), "", "", p.Runs, 0)
			for _, bo := range p.ByOrder {
				if bo.MedianMS != nil {
					row("paired_median_ms_by_order", bo.Order, "", f(*bo.MedianMS), "", "", bo.Runs, 0)
				}
			}
		}
		if a := g.Availability; a != nil {
			row("h3_availability", "h3", "", f(a.Share), fp(a.CILow), fp(a.CIHigh), 0, a.WantedH3)
		}
		if t := g.ITT; t != nil {
			for _, o := range []struct {
				origin string
				s      *model.ITTStats
			}{{"h2", t.H2}, {"h3", t.H3}} {
				if o.s == nil {
					continue
				}
				for _, p := range o.s.Percentiles {
					row("itt_ms", o.origin, strconv.FormatFloat(p.P, 'f', -1, 64), f(p.MS), "", "", o.s.Runs, o.s.Samples)
				}
				row("itt_run_failure_rate", o.origin, "", f(o.s.RunFailureRate), fp(o.s.RunFailureLow), fp(o.s.RunFailureHigh), o.s.Runs, o.s.Samples)
			}
		}
		for _, fl := range g.Failures {
			row("failures", fl.Origin+":"+fl.Error, "", strconv.Itoa(fl.Samples), "", "", 0, fl.Samples)
		}
	}
	firstContactCSV(cw, r)
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	return nil
}

// firstContactCSV writes the first-contact rows of the report's groups:
// first_contact_share (outcome h3_first, split as h3_known_before and
// h3_from_page, upgraded or never; runs: those where the first request was
// seen) and first_contact_runs (outcome also h3_first_unattributed,
// not_measured or unknown; value and runs: counts of runs). too_small is
// the group's in the headline, empty for a group it does not have.
func firstContactCSV(cw *csv.Writer, r *model.Report) {
	if r.FirstContact == nil {
		return
	}
	small := map[string]string{}
	for _, g := range r.Groups {
		small[g.Group] = strconv.FormatBool(g.TooSmall)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, c := range r.FirstContact.Groups {
		row := func(measure, outcome, value, lo, hi string, runs int) {
			cw.Write([]string{csvText(c.Group), small[c.Group], measure, outcome, "", value, lo, hi, strconv.Itoa(runs), "0", ""})
		}
		for _, s := range []struct {
			outcome string
			p       *model.Proportion
		}{{"h3_first", c.H3FirstShare}, {"h3_known_before", c.KnownBeforeShare}, {"h3_from_page", c.FromPageShare},
			{"upgraded", c.UpgradedShare}, {"never", c.NeverShare}} {
			if s.p != nil {
				row("first_contact_share", s.outcome, f(s.p.Share), f(*s.p.CILow), f(*s.p.CIHigh), c.Measured)
			}
		}
		for _, n := range []struct {
			outcome string
			n       int
		}{{"h3_first", c.H3First}, {"h3_known_before", c.KnownBefore}, {"h3_from_page", c.FromPage}, {"h3_first_unattributed", c.Unattributed},
			{"upgraded", c.Upgraded}, {"never", c.Never}, {"not_measured", c.NotMeasured}, {"unknown", c.Unknown}} {
			row("first_contact_runs", n.outcome, strconv.Itoa(n.n), "", "", c.Runs)
		}
	}
}

// csvText makes a text cell safe to open in a spreadsheet. Excel,
// LibreOffice and Google Sheets take a cell that begins with =, +, -, @, a
// tab or a carriage return for a formula (=HYPERLINK(…) sends whoever
// clicks it anywhere), so such a cell gets a leading single quote, which
// they read as "this is text", as OWASP's CSV injection guidance advises;
// a NUL is treated alike (ASVS 1.2.10). Only text cells go through it:
// group labels and outcomes can carry what visitors' reports said (a
// collector id, a connection type stored before it was checked), while
// the number cells are written by strconv and must stay numbers (-12.5).
func csvText(s string) string {
	if s != "" && strings.IndexByte("=+-@\t\r\x00", s[0]) >= 0 {
		return "'" + s
	}
	return s
}
