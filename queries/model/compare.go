package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/h3rum/h3rum/queries/stats"
)

// Comparison is the answer of Compare.
type Comparison struct {
	Version int        `json:"version"`
	P       float64    `json:"p"`
	Level   float64    `json:"level"`
	Power   float64    `json:"power"`
	Before  WindowInfo `json:"before"`
	After   WindowInfo `json:"after"`
	// Groups are the groups of either window, largest first (by their
	// runs in both windows).
	Groups []GroupChange `json:"groups"`
}

// WindowInfo is one window of a comparison.
type WindowInfo struct {
	Since  string `json:"since"` // RFC 3339
	Until  string `json:"until"`
	Design Design `json:"design"`
	Runs   int    `json:"runs"`
}

// GroupChange is one group's change between the windows.
type GroupChange struct {
	Group  string  `json:"group"`
	Before Verdict `json:"before"` // the group's verdict in each window (not_enough_runs when absent)
	After  Verdict `json:"after"`
	Change string  `json:"change"` // ChangeH3Gained, …
	// ChangeMS is after − before of H3 − H2 at P, ms (null unless both
	// windows have a difference); CILowMS and CIHighMS its 95 % interval
	// (null unless both have an interval); MDEMS the smallest change these
	// runs detect with 80 % power.
	ChangeMS *float64 `json:"change_ms"`
	CILowMS  *float64 `json:"ci_low_ms"`
	CIHighMS *float64 `json:"ci_high_ms"`
	MDEMS    *float64 `json:"mde_ms"`
	Text     string   `json:"text"`
}

const timeFormat = "2006-01-02T15:04:05Z07:00"

// NewComparison pairs the two reports' verdicts by group.
func NewComparison(b, a *Report, p float64) *Comparison {
	c := &Comparison{Version: b.Version, P: p, Level: VerdictLevel, Power: VerdictPower,
		Before: windowInfo(b), After: windowInfo(a)}
	verdicts := func(r *Report) map[string]Verdict {
		m := map[string]Verdict{}
		for _, v := range r.Verdicts {
			m[v.Group] = v
		}
		return m
	}
	vb, va := verdicts(b), verdicts(a)
	var names []string
	for n := range vb {
		names = append(names, n)
	}
	for n := range va {
		if _, ok := vb[n]; !ok {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(x, y string) int {
		if d := (va[y].Runs + vb[y].Runs) - (va[x].Runs + vb[x].Runs); d != 0 {
			return d
		}
		if x < y {
			return -1
		}
		return 1
	})
	for _, n := range names {
		missing := Verdict{Group: n, P: c.P, Verdict: VerdictNotEnoughRuns, Level: VerdictLevel, Power: VerdictPower}
		before, ok := vb[n]
		if !ok {
			before = missing
		}
		after, ok := va[n]
		if !ok {
			after = missing
		}
		c.Groups = append(c.Groups, changeOf(n, c.P, before, after))
	}
	return c
}

func windowInfo(r *Report) WindowInfo {
	w := WindowInfo{Since: r.Since.Format(timeFormat), Until: r.Until.Format(timeFormat), Design: r.Design}
	for _, g := range r.Groups {
		w.Runs += g.Runs
	}
	return w
}

// changeOf is the change of one group's difference between two verdicts.
func changeOf(group string, p float64, before, after Verdict) GroupChange {
	g := GroupChange{Group: group, Before: before, After: after, Change: ChangeNotEnoughRun}
	if before.DiffMS != nil && after.DiffMS != nil {
		g.ChangeMS = Ptr(Round3(*after.DiffMS - *before.DiffMS))
	}
	if lo, hi, mdc, ok := changeInterval(before, after); ok {
		g.CILowMS, g.CIHighMS, g.MDEMS = Ptr(Round3(lo)), Ptr(Round3(hi)), Ptr(Round3(mdc))
		switch {
		case hi < 0:
			g.Change = ChangeH3Gained
		case lo > 0:
			g.Change = ChangeH3Lost
		default:
			g.Change = ChangeNone
		}
	}
	g.Text = g.text(p)
	return g
}

// changeInterval is the 95 % interval of after − before and the minimum
// detectable change, from the two verdicts' bootstrap intervals.
func changeInterval(before, after Verdict) (lo, hi, mdc float64, ok bool) {
	if before.DiffMS == nil || after.DiffMS == nil || before.CILowMS == nil || before.CIHighMS == nil ||
		after.CILowMS == nil || after.CIHighMS == nil {
		return 0, 0, 0, false
	}
	seB := stats.SE(*before.CILowMS, *before.CIHighMS)
	seA := stats.SE(*after.CILowMS, *after.CIHighMS)
	se := math.Hypot(seB, seA)
	d := *after.DiffMS - *before.DiffMS
	return d - stats.Margin(se), d + stats.Margin(se), stats.MDE(se), true
}

func (g *GroupChange) text(p float64) string {
	at := fmt.Sprintf("p%g", p)
	switch g.Change {
	case ChangeNotEnoughRun:
		return fmt.Sprintf("%s: not enough runs at %s in both windows to compare (%s runs before, %s after)",
			g.Group, at, GroupDigits(g.Before.Runs), GroupDigits(g.After.Runs))
	case ChangeNone:
		return fmt.Sprintf("%s: no change detectable at %s (H3 − H2 %s ms → %s ms; change %s ms, 95 %% CI %s to %s); with these runs the smallest detectable change is ±%s ms",
			g.Group, at, signedRough(*g.Before.DiffMS), signedRough(*g.After.DiffMS), signedRough(*g.ChangeMS),
			signedRough(*g.CILowMS), signedRough(*g.CIHighMS), roughMS(*g.MDEMS))
	}
	how := "gained"
	if g.Change == ChangeH3Lost {
		how = "lost"
	}
	return fmt.Sprintf("%s: HTTP/3 %s %s ms at %s (H3 − H2 %s ms → %s ms; 95 %% CI of the change %s to %s), %s and %s runs",
		g.Group, how, roughMS(math.Abs(*g.ChangeMS)), at, signedRough(*g.Before.DiffMS), signedRough(*g.After.DiffMS),
		signedRough(*g.CILowMS), signedRough(*g.CIHighMS), GroupDigits(g.Before.Runs), GroupDigits(g.After.Runs))
}

// Changes, as GroupChange.Change spells them.
const (
	ChangeH3Gained     = "h3_gained"       // the change's interval lies below zero: H3 − H2 fell
	ChangeH3Lost       = "h3_lost"         // the change's interval lies above zero: H3 − H2 rose
	ChangeNone         = "no_change"       // the interval holds zero
	ChangeNotEnoughRun = "not_enough_runs" // a window has no interval at the percentile
)
