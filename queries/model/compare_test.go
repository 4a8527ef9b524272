package model

import (
	"math"
	"strings"
	"testing"

	"github.com/h3rum/h3rum/queries/stats"
)

func TestChangeInterval(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name           string
		before, after  Verdict
		lo, hi, mdc    float64
		ok             bool
		wantChange     string
		wantTextPrefix string
	}{
		{
			// Two intervals of half-width 1.96 (SE 1): the change's SE is √2.
			name:   "gain",
			before: Verdict{DiffMS: f(0), CILowMS: f(-1.96), CIHighMS: f(1.96), Runs: 1000},
			after:  Verdict{DiffMS: f(-20), CILowMS: f(-21.96), CIHighMS: f(-18.04), Runs: 900},
			lo:     -20 - 1.96*math.Sqrt2, hi: -20 + 1.96*math.Sqrt2, mdc: stats.MDE(1) * math.Sqrt2, ok: true,
			wantChange: ChangeH3Gained, wantTextPrefix: "AS: HTTP/3 gained 20 ms at p95",
		},
		{
			name:   "loss",
			before: Verdict{DiffMS: f(-30), CILowMS: f(-40), CIHighMS: f(-20), Runs: 500},
			after:  Verdict{DiffMS: f(0), CILowMS: f(-10), CIHighMS: f(10), Runs: 500},
			lo:     30 - 1.96*math.Hypot(10/1.96, 10/1.96), hi: 30 + 1.96*math.Hypot(10/1.96, 10/1.96),
			mdc: stats.MDE(1) * math.Hypot(10/1.96, 10/1.96), ok: true,
			wantChange: ChangeH3Lost, wantTextPrefix: "AS: HTTP/3 lost 30 ms at p95",
		},
		{
			// Each window alone excludes zero, their change does not.
			name:   "no change",
			before: Verdict{DiffMS: f(-10), CILowMS: f(-15), CIHighMS: f(-5), Runs: 500},
			after:  Verdict{DiffMS: f(-12), CILowMS: f(-17), CIHighMS: f(-7), Runs: 500},
			lo:     -2 - 1.96*math.Hypot(5/1.96, 5/1.96), hi: -2 + 1.96*math.Hypot(5/1.96, 5/1.96),
			mdc: stats.MDE(1) * math.Hypot(5/1.96, 5/1.96), ok: true,
			wantChange: ChangeNone, wantTextPrefix: "AS: no change detectable at p95",
		},
		{
			name:       "a window without an interval",
			before:     Verdict{DiffMS: f(-10), Runs: 40},
			after:      Verdict{DiffMS: f(-12), CILowMS: f(-17), CIHighMS: f(-7), Runs: 500},
			wantChange: ChangeNotEnoughRun, wantTextPrefix: "AS: not enough runs at p95 in both windows to compare (40 runs before, 500 after)",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			lo, hi, mdc, ok := changeInterval(c.before, c.after)
			// z₀.₉₇₅ is 1.95996…, not 1.96: the cases are written with 1.96.
			if ok != c.ok || math.Abs(lo-c.lo) > 0.01 || math.Abs(hi-c.hi) > 0.01 || math.Abs(mdc-c.mdc) > 0.01 {
				t.Errorf("changeInterval = [%.3f, %.3f], MDC %.3f, %v; want [%.3f, %.3f], %.3f, %v", lo, hi, mdc, ok, c.lo, c.hi, c.mdc, c.ok)
			}
			g := changeOf("AS", 95, c.before, c.after)
			if g.Change != c.wantChange || !strings.HasPrefix(g.Text, c.wantTextPrefix) {
				t.Errorf("change %s, %q; want %s, %q…", g.Change, g.Text, c.wantChange, c.wantTextPrefix)
			}
		})
	}
}
