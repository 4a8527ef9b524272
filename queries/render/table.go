package render

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/h3rum/h3rum/queries/model"
)

// outcomeLabel names outcomes for people.
var outcomeLabel = map[string]string{
	model.OutcomeH2:            "h2",
	model.OutcomeH3:            "h3",
	model.OutcomeWantedH3GotH2: "wanted h3, got h2",
	model.OutcomeOther:         "other",
}

// InsufficientMark follows, in the table, an estimate too few runs stand
// behind.
const InsufficientMark = "†"

// flagged marks an estimate insufficient for an interval.
func flagged(v string, insufficient bool) string {
	if insufficient {
		return v + InsufficientMark
	}
	return v
}

func siteText(s string) string {
	if s == "" {
		return "all sites"
	}
	return s
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

// ms formats a duration in ms with one decimal.
func ms(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// signed formats a difference with an explicit sign.
func signed(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if v >= 0 && s != "0.0" {
		s = "+" + s
	} else if s == "-0.0" {
		s = "0.0"
	}
	return s + unit
}

// ci formats an interval, "-" when none was computed (an estimate with
// too few runs for one shows "—" instead).
func ci(lo, hi *float64, unit string) string {
	if lo == nil || hi == nil {
		return "-"
	}
	return "[" + signed(*lo, unit) + ", " + signed(*hi, unit) + "]"
}

func share(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }

func shareCI(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return "-"
	}
	return "[" + share(*lo) + ", " + share(*hi) + "]"
}

// Table writes r for a terminal: aligned columns, units in the headers,
// signed differences, small groups marked with "*".
func Table(w io.Writer, r *model.Report) error {
	bw := &errWriter{w: w}
	fmt.Fprintf(bw, "h3rum report  %s – %s  %s  by %s  (source: %s)\n",
		r.Since.Format(time.RFC3339), r.Until.Format(time.RFC3339), siteText(r.Site), r.By, r.Source)
	if s := r.SiteWide; s != nil {
		fmt.Fprintln(bw, s.Headline)
		for _, v := range s.Verdicts {
			fmt.Fprintln(bw, "  "+v.Text)
		}
		fmt.Fprintf(bw, "  (%s)\n\n", s.WeightsText())
	}
	if len(r.Verdicts) > 0 {
		for _, v := range model.ByEffect(r.Verdicts) {
			fmt.Fprintln(bw, v.Text)
		}
		fmt.Fprintf(bw, "(verdicts: %s)\n\n", r.VerdictRuleText())
	}
	fmt.Fprintf(bw, "selection: %s; %s; %s; %s\n\n", r.Selection(), r.DesignText(), r.EstimateText(), r.CIText())
	if len(r.Groups) == 0 {
		fmt.Fprintln(bw, "no samples in this window")
		writeNEL(bw, r)          // NEL also hears from visitors whose page never ran the script
		writeScriptErrors(bw, r) // and runs a script error cut short may have no batch
		writeFirstContact(bw, r) // and a run cut short in its warm-ups has a first contact
		writeSections(bw, r)
		return bw.err
	}
	small, insufficient := writeDurations(bw, r)
	writeGroupSections(bw, r)
	writeNEL(bw, r)
	writeScriptErrors(bw, r)
	writeFirstContact(bw, r)
	writeSections(bw, r)
	if small || insufficient {
		fmt.Fprintln(bw)
	}
	if small {
		fmt.Fprintf(bw, "* fewer than %d runs with H2 or H3: shown, but not to be trusted.\n", r.MinRuns)
	}
	if insufficient {
		fmt.Fprintf(bw, "%s too few runs for an interval at this percentile (%s): estimate only, interval —.\n",
			InsufficientMark, model.SufficiencyText())
	}
	return bw.err
}

// writeDurations writes the headline's table: each group's outcomes at
// every percentile and H3 − H2 with its interval; it reports whether a
// group is too small and whether a percentile lacks an interval, for the
// footnotes.
func writeDurations(bw io.Writer, r *model.Report) (small, insufficient bool) {
	fmt.Fprintln(bw, "Request duration, ms (H3-H2 < 0: HTTP/3 faster)")
	tw := &table{left: 2}
	fmt.Fprint(tw, "group\tproto\truns\tsamples\t")
	for _, p := range r.Percentiles {
		fmt.Fprintf(tw, "p%g\t", p)
	}
	fmt.Fprintln(tw)
	for i := range r.Groups {
		g := &r.Groups[i]
		small = small || g.TooSmall
		first := true
		label := func() string {
			if first {
				first = false
				return groupName(g)
			}
			return ""
		}
		for _, o := range g.Outcomes() {
			if o.Stats == nil {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t", label(), outcomeLabel[o.Outcome], o.Stats.Runs, o.Stats.Samples)
			for _, p := range o.Stats.Percentiles {
				fmt.Fprintf(tw, "%s\t", flagged(ms(p.MS), p.Insufficient))
				insufficient = insufficient || p.Insufficient
			}
			fmt.Fprintln(tw)
		}
		if len(g.Diff) > 0 {
			withCI := r.CI.Method != "none"
			diffRows(tw, label(), "H3-H2 ms", "", g.Diff, withCI, func(d model.Diff) (float64, *float64, *float64) {
				return d.MS, d.CILowMS, d.CIHighMS
			})
			diffRows(tw, "", "H3-H2 %", "%", g.Diff, withCI, func(d model.Diff) (float64, *float64, *float64) {
				return d.Pct, d.CILowPct, d.CIHighPct
			})
		}
	}
	tw.flush(bw)
	return small, insufficient
}

// groupName is a group's name as the tables write it, marked when the
// group is too small.
func groupName(g *model.Group) string {
	if g.TooSmall {
		return g.Group + " *"
	}
	return g.Group
}

// writeSection writes a titled table whose first left columns are text,
// with rows written by groupRows for each group.
func writeSection(bw io.Writer, r *model.Report, title string, left int, header string, groupRows func(tw io.Writer, g *model.Group)) {
	fmt.Fprintln(bw, "\n"+title)
	tw := &table{left: left}
	fmt.Fprintln(tw, header)
	for i := range r.Groups {
		groupRows(tw, &r.Groups[i])
	}
	tw.flush(bw)
}

// writeGroupSections writes the per-group tables below the headline: the
// paired view and availability, then the optional ones.
func writeGroupSections(bw io.Writer, r *model.Report) {
	section := func(title string, left int, header string, groupRows func(tw io.Writer, g *model.Group)) {
		writeSection(bw, r, title, left, header, groupRows)
	}
	section("Within-run difference d = median(H3 batch) - median(H2 batch), ms (paired view; p90 is the 90th percentile of d over runs; won/tie/lost: d ≤ -0.5, |d| < 0.5, d ≥ 0.5 ms)", 1,
		"group\truns\tmedian d\t95% CI\tp90 of d\t95% CI\tH3 won\t95% CI\ttie\tlost\t", func(tw io.Writer, g *model.Group) {
			p := g.Paired
			if p == nil {
				fmt.Fprintf(tw, "%s\t0\t-\t\t-\t\t-\t\t-\t-\t\n", groupName(g))
				return
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", groupName(g), p.Runs,
				signed(p.MedianMS, ""), ci(p.MedianCILowMS, p.MedianCIHighMS, ""),
				signed(p.P90MS, ""), ci(p.P90CILowMS, p.P90CIHighMS, ""),
				share(p.H3WonShare), shareCI(p.H3WonCILow, p.H3WonCIHigh), share(p.H3TieShare), share(p.H3LostShare))
		})
	section("HTTP/3 availability: runs (estimate: requests) whose H3 batch used h3 throughout", 1,
		"group\twanted h3\tgot h3\tshare\t95% CI\t", func(tw io.Writer, g *model.Group) {
			a := g.Availability
			if a == nil {
				fmt.Fprintf(tw, "%s\t0\t0\t-\t-\t\n", groupName(g))
				return
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t\n", groupName(g), a.WantedH3, a.GotH3, share(a.Share), shareCI(a.CILow, a.CIHigh))
		})

	writeOptionalSections(bw, r)
}

// writeOptionalSections writes the per-group tables a report has only
// where some group has their figures: the intention-to-treat view,
// handshakes, failures and the runs left out.
func writeOptionalSections(bw io.Writer, r *model.Report) {
	section := func(title string, left int, header string, groupRows func(tw io.Writer, g *model.Group)) {
		writeSection(bw, r, title, left, header, groupRows)
	}
	var hasITT bool
	for i := range r.Groups {
		hasITT = hasITT || r.Groups[i].ITT != nil
	}
	if hasITT {
		header := "group\tsent to\truns\trequests\tfailed\truns failing\t95% CI\t"
		for _, p := range r.Percentiles {
			header += fmt.Sprintf("p%g\t", p)
		}
		section("Intention to treat: every request of the design's non-bot runs by the origin it was sent to, failures at the 10 s timeout", 2,
			header, func(tw io.Writer, g *model.Group) {
				if g.ITT == nil {
					return
				}
				for _, o := range []struct {
					name string
					s    *model.ITTStats
				}{{"H2 origin", g.ITT.H2}, {"H3 origin", g.ITT.H3}} {
					if o.s == nil {
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t", groupName(g), o.name, o.s.Runs, o.s.Samples, o.s.Failed,
						share(o.s.RunFailureRate), shareCI(o.s.RunFailureLow, o.s.RunFailureHigh))
					for _, p := range o.s.Percentiles {
						fmt.Fprintf(tw, "%s\t", ms(p.MS))
					}
					fmt.Fprintln(tw)
				}
			})
	}

	var hasHandshakes bool
	for i := range r.Groups {
		hasHandshakes = hasHandshakes || len(r.Groups[i].Handshakes) > 0
	}
	if hasHandshakes {
		section("Handshakes: requests on a new connection, by protocol (apart from the warm comparison above)", 2,
			"group\tproto\trequests\tfastest ms\tp50 ms\tp90 ms\tconnect p50 ms\tresumed\t0-RTT\t", func(tw io.Writer, g *model.Group) {
				for _, h := range g.Handshakes {
					proto := h.Proto
					if h.Kind != "" {
						proto += " " + h.Kind
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", groupName(g), proto, h.Samples,
						ms(h.FastestMS), ms(pctl(h.Percentiles, 50)), ms(pctl(h.Percentiles, 90)), ms(pctl(h.ConnectMS, 50)),
						share(h.ResumedShare), share(h.EarlyShare))
				}
			})
	}

	var failed bool
	for i := range r.Groups {
		failed = failed || len(r.Groups[i].Failures) > 0
	}
	if failed {
		verb := "excluded"
		if r.Filters.IncludeFailed {
			verb = "included above"
		}
		section("Failed requests ("+verb+")", 3, "group\torigin\terror\trequests\t", func(tw io.Writer, g *model.Group) {
			for _, f := range g.Failures {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t\n", groupName(g), f.Origin, f.Error, f.Samples)
			}
		})
	}
	var excl []string
	for i := range r.Groups {
		if t := r.Groups[i].ExcludedText(); t != "" {
			excl = append(excl, t)
		}
	}
	if len(excl) > 0 {
		fmt.Fprintf(bw, "\nRuns left out of the headline, by reason (a run under each of its reasons)\n  %s\n", strings.Join(excl, "\n  "))
	}
}

// writeSections writes, under their names, what sections the report has
// no field for (its Sections), as their JSON: a new section shows here
// before it has a table of its own.
func writeSections(w io.Writer, r *model.Report) {
	for _, name := range slices.Sorted(maps.Keys(r.Sections)) {
		b, err := json.Marshal(r.Sections[name])
		if err != nil {
			fmt.Fprintf(w, "\n%s: %v\n", name, err)
			continue
		}
		fmt.Fprintf(w, "\n%s\n  %s\n", name, b)
	}
}

// writeNEL writes the Network Error Logging section (complete reports).
func writeNEL(w io.Writer, r *model.Report) {
	n := r.NEL
	if n == nil {
		return
	}
	fmt.Fprintf(w, "\nNetwork Error Logging: failed requests to the origins that browsers reported, by %s, type and protocol (all sites; estimated requests = reports / sampling fraction)\n", n.By)
	if len(n.Failures) == 0 {
		fmt.Fprintln(w, "  no NEL failure reports in this window")
	} else {
		tw := &table{left: 4}
		fmt.Fprintln(tw, "group\ttype\tphase\tproto\treports\testimated\t")
		for _, f := range n.Failures {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t\n", f.Group, f.Type, f.Phase, f.Proto, f.Reports, strconv.FormatFloat(f.Estimated, 'f', -1, 64))
		}
		tw.flush(w)
	}
	if len(n.Protocols) == 0 {
		return
	}
	fmt.Fprintln(w, "\nNEL by protocol: failure share (where success sampling is on) and elapsed time of successful /probe requests, beside the beacon's duration (ms)")
	tw := &table{left: 1}
	fmt.Fprintln(tw, "proto\tok reports\tfailed (est.)\tfailure share\tNEL probe ok\tNEL p50\tNEL p90\tbeacon samples\tbeacon p50\tbeacon p90\t")
	dash := func(ps []model.Percentile, p float64) string {
		if len(ps) == 0 {
			return "-"
		}
		return ms(pctl(ps, p))
	}
	for _, p := range n.Protocols {
		fs := "-"
		if p.FailureShare != nil {
			fs = share(*p.FailureShare)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t\n", p.Proto, p.OKReports,
			strconv.FormatFloat(p.FailedEstimated, 'f', -1, 64), fs, p.ProbeOKReports,
			dash(p.Elapsed, 50), dash(p.Elapsed, 90), p.BeaconSamples, dash(p.Beacon, 50), dash(p.Beacon, 90))
	}
	tw.flush(w)
}

// writeScriptErrors writes the section "Script errors by browser"
// (complete reports).
func writeScriptErrors(w io.Writer, r *model.Report) {
	se := r.ScriptErrors
	if se == nil {
		return
	}
	fmt.Fprintf(w, "\nScript errors by browser: runs of beacon %s and later, the runs with a script error, and errors by stage\n", se.SinceBeacon)
	if len(se.Browsers) == 0 {
		fmt.Fprintln(w, "  no such run in this window")
		return
	}
	tw := &table{left: 1}
	fmt.Fprintln(tw, "browser\truns\twith errors\tidle\twarmup\tbatch\ttiming\tsend\t")
	for _, b := range se.Browsers {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", b.Browser, b.Runs, b.RunsWithErrors, b.Idle, b.Warmup, b.Batch, b.Timing, b.Send)
	}
	tw.flush(w)
}

// writeFirstContact writes the section "First contact with the HTTP/3
// origin" (complete reports): by the report's grouping, then by browser.
func writeFirstContact(w io.Writer, r *model.Report) {
	fc := r.FirstContact
	if fc == nil {
		return
	}
	fmt.Fprintln(w, "\nFirst contact with the HTTP/3 origin: each run's first request to it (every design; shares of the runs where it was seen)")
	if len(fc.Groups) == 0 {
		fmt.Fprintln(w, "  no such run in this window")
		return
	}
	pc := func(p *model.Proportion) string {
		if p == nil {
			return "-"
		}
		return share(p.Share)
	}
	write := func(title string, list []model.FirstContactCount) {
		tw := &table{left: 1}
		fmt.Fprintln(tw, title+"\truns\th3 first\tknown before\tfrom page\tupgraded\tnever\th3 first share\t95% CI\tknown before share\tupgraded share\tnever share\tnot measured\tunknown\t")
		for _, c := range list {
			var lo, hi *float64
			if c.H3FirstShare != nil {
				lo, hi = c.H3FirstShare.CILow, c.H3FirstShare.CIHigh
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n", c.Group, c.Runs, c.H3First, c.KnownBefore, c.FromPage,
				c.Upgraded, c.Never, pc(c.H3FirstShare), shareCI(lo, hi), pc(c.KnownBeforeShare), pc(c.UpgradedShare), pc(c.NeverShare), c.NotMeasured, c.Unknown)
		}
		tw.flush(w)
	}
	write("group", fc.Groups)
	if fc.By != "browser" {
		fmt.Fprintln(w)
		write("browser", fc.Browsers)
	}
	fmt.Fprintln(w, "h3 first: HTTP/3 known before the request, either before the page (known before: an HTTPS DNS record or an Alt-Svc cached on an earlier visit) "+
		"or from the page's own loads over TCP, the script's among them (from page; the rest of h3 first, scripts before 1.4.0, is not attributed); "+
		"upgraded: h2 first, h3 later (the warm-ups' Alt-Svc); never: no h3; not measured: warm-up 0; unknown: the first request failed, is missing or had no protocol.")
}

// diffRows writes a row of differences, labelled title, picked from diffs
// with their unit, and with intervals a row of their 95 % CIs.
func diffRows(tw io.Writer, label, title, unit string, diffs []model.Diff, withCI bool, pick func(model.Diff) (v float64, lo, hi *float64)) {
	fmt.Fprintf(tw, "%s\t%s\t\t\t", label, title)
	for _, d := range diffs {
		v, _, _ := pick(d)
		fmt.Fprintf(tw, "%s\t", flagged(signed(v, unit), d.Insufficient))
	}
	fmt.Fprintln(tw)
	if withCI {
		fmt.Fprint(tw, "\t  95% CI\t\t\t")
		for _, d := range diffs {
			_, lo, hi := pick(d)
			if d.Insufficient {
				fmt.Fprint(tw, "—\t")
				continue
			}
			fmt.Fprintf(tw, "%s\t", ci(lo, hi, unit))
		}
		fmt.Fprintln(tw)
	}
}

// errWriter keeps the first write error so formatting code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	_, e.err = e.w.Write(p)
	return len(p), nil
}

// table aligns tab-separated cells: the first left columns to the left,
// the rest (numbers) to the right; a row ends with a newline.
type table struct {
	left int
	rows [][]string
	cur  []string
	cell strings.Builder
}

func (t *table) Write(p []byte) (int, error) {
	for _, c := range string(p) {
		switch c {
		case '\t':
			t.cur = append(t.cur, t.cell.String())
			t.cell.Reset()
		case '\n':
			if t.cell.Len() > 0 {
				t.cur = append(t.cur, t.cell.String())
				t.cell.Reset()
			}
			t.rows = append(t.rows, t.cur)
			t.cur = nil
		default:
			t.cell.WriteRune(c)
		}
	}
	return len(p), nil
}

func (t *table) flush(w io.Writer) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < t.left {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	t.rows = nil
}
