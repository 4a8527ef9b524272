package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/queries/stats"
)

// A verdict is the power rule (queries/stats/power.go) applied to a group's H3 − H2
// difference at one percentile and its bootstrap interval, said in words,
// with what the runs at hand can and cannot tell apart. The report's
// verdicts use it, and so can anything that must decide whether a
// difference is detectable with a given number of runs. Each group is
// judged at its own 95 % (REPORT.md, "Verdicts", says why no correction
// across groups).

// Verdicts, as Verdict.Verdict spells them.
const (
	VerdictFaster        = "h3_faster"       // the interval lies below zero
	VerdictSlower        = "h3_slower"       // the interval lies above zero
	VerdictNoDifference  = "no_difference"   // the interval holds zero
	VerdictNotEnoughRuns = "not_enough_runs" // below the sufficiency rule or min_runs: no interval to judge by
	VerdictNoInterval    = "no_interval"     // intervals were not computed (disabled, or an estimate)
	VerdictNoHTTP3       = "no_h3"           // no H3 batch used h3: nothing to compare, however many runs come
	// VerdictKeepGoing is an experiment's (VerdictRule.Experiment): its
	// confidence sequence holds zero and an effect of interest, so more
	// runs will decide.
	VerdictKeepGoing = "keep_going"
)

// Defaults of VerdictRule, and the rule's fixed levels.
const (
	DefaultVerdictP = 95          // Dropbox's headline percentile: HTTP/3's gain lives in the tail
	DefaultEffectMS = 10          // the effect of interest for "how many more runs"
	VerdictLevel    = stats.Level // the bootstrap intervals', which the verdict reads
	VerdictPower    = stats.Power
)

// The range of an effect (Options.EffectMS). Below a browser's timer
// resolution (100 µs) no run measures it; above the request timeout no two
// durations of a report can differ by it (a failed request counts at the
// timeout).
const (
	MinEffectMS = 0.1
	MaxEffectMS = beacon.RequestTimeoutMS
)

// VerdictRule says what a verdict judges. The zero value judges p95, asks
// about 10 ms and takes DefaultMinRuns.
type VerdictRule struct {
	// P is the percentile judged, one of the report's. 0 means
	// DefaultVerdictP.
	P float64
	// EffectMS is the difference, in ms, for which a verdict says how
	// many more runs would detect it. 0 means DefaultEffectMS.
	EffectMS float64
	// MinRuns is the report's min_runs: a group below it gets no verdict.
	// 0 means DefaultMinRuns.
	MinRuns int
	// Experiment judges by a confidence sequence (stats.Sequence), which
	// holds at any number of looks, instead of one look's interval: for a
	// window with a fixed start that is read again as runs arrive. A
	// faster or slower verdict then stands however often it was read, and
	// an undecided one is VerdictKeepGoing.
	Experiment bool
}

func (r VerdictRule) withDefaults() VerdictRule {
	if r.P == 0 {
		r.P = DefaultVerdictP
	}
	if r.EffectMS == 0 {
		r.EffectMS = DefaultEffectMS
	}
	if r.MinRuns == 0 {
		r.MinRuns = DefaultMinRuns
	}
	return r
}

// Verdict is the answer for one group at one percentile.
type Verdict struct {
	Group   string  `json:"group"`
	P       float64 `json:"p"`
	Verdict string  `json:"verdict"` // VerdictFaster, …
	// Runs are the runs behind the comparison: the fewer of H2's and
	// H3's (0 without both), as the bootstrap counted them (exact) unless
	// it had a sample of the group's runs.
	Runs int `json:"runs"`
	// DiffMS and DiffPct are H3 − H2 at P (null without both protocols);
	// CILowMS and CIHighMS its 95 % interval (null without one).
	DiffMS   *float64 `json:"diff_ms"`
	DiffPct  *float64 `json:"diff_pct"`
	CILowMS  *float64 `json:"ci_low_ms"`
	CIHighMS *float64 `json:"ci_high_ms"`
	Level    float64  `json:"level"` // VerdictLevel
	Power    float64  `json:"power"` // VerdictPower
	// MDEMS is the minimum detectable effect with these runs, in ms
	// either way: (z₀.₉₇₅ + z₀.₈₀) × SE, SE = interval width / (2 z₀.₉₇₅).
	// Null without an interval.
	MDEMS    *float64 `json:"mde_ms"`
	EffectMS float64  `json:"effect_ms"`
	// RunsForEffect is how many runs in all would detect EffectMS with
	// 80 % power (MDE ∝ 1/√runs); MoreRunsForEffect how many beyond Runs
	// (0 when Runs already do). Null without an MDE.
	RunsForEffect     *int `json:"runs_for_effect"`
	MoreRunsForEffect *int `json:"more_runs_for_effect"`
	// RunsForInterval is what an interval at P asks of both protocols:
	// the sufficiency rule's runs (MinTailRuns) or min_runs, the larger;
	// MoreRunsForInterval how many are missing (0 unless not_enough_runs).
	RunsForInterval     int `json:"runs_for_interval"`
	MoreRunsForInterval int `json:"more_runs_for_interval"`
	// Experiment is the confidence sequence's reading in an experiment
	// (VerdictRule.Experiment), which Verdict then states; absent in a
	// window's one-look verdict.
	Experiment *ExperimentVerdict `json:"experiment,omitempty"`
	// Text says it in one line.
	Text string `json:"text"`

	availability *Availability // no_h3's, for its text
}

// Judge is the power rule applied to g, a group of a complete report: its
// verdict at r.P, the minimum detectable effect, and the runs it would
// take to detect r.EffectMS or to get an interval at all.
func (r VerdictRule) Judge(g *Group) Verdict {
	r = r.withDefaults()
	v := Verdict{Group: g.Group, P: r.P, Level: VerdictLevel, Power: VerdictPower, EffectMS: r.EffectMS,
		RunsForInterval: max(stats.RunsNeeded(r.P), r.MinRuns)}
	runs := func(s *Stats) int {
		if s.fetchedRuns > 0 && !g.Sampled {
			return s.fetchedRuns
		}
		return s.Runs
	}
	if g.H2 != nil && g.H3 != nil {
		v.Runs = min(runs(g.H2), runs(g.H3))
	}
	var d *Diff
	for i := range g.Diff {
		if g.Diff[i].P == r.P {
			d = &g.Diff[i]
		}
	}
	if d != nil {
		v.DiffMS, v.DiffPct = Ptr(d.MS), Ptr(d.Pct)
	}
	tooSmall := g.H2 == nil || g.H3 == nil || v.Runs < r.MinRuns
	a := g.Availability
	switch {
	case g.H3 == nil && a != nil && a.WantedH3 > 0 && a.GotH3 == 0:
		// Where QUIC does not get through (a network that blocks UDP,
		// HTTP/3 not advertised) more runs give no comparison: saying
		// "not enough runs yet" would promise one.
		v.Verdict = VerdictNoHTTP3
		v.availability = a
	case d == nil || d.Insufficient || tooSmall:
		v.Verdict = VerdictNotEnoughRuns
		// At least one: an estimate's run counts (a rollup's) may
		// overstate those the rule will count a little.
		v.MoreRunsForInterval = max(v.RunsForInterval-v.Runs, 1)
	case d.CILowMS == nil || d.CIHighMS == nil:
		v.Verdict = VerdictNoInterval
	default:
		lo, hi := *d.CILowMS, *d.CIHighMS
		v.CILowMS, v.CIHighMS = Ptr(lo), Ptr(hi)
		v.MDEMS = Ptr(stats.MDE(stats.SE(lo, hi)))
		switch stats.Decide(lo, hi) {
		case stats.Faster:
			v.Verdict = VerdictFaster
		case stats.Slower:
			v.Verdict = VerdictSlower
		default:
			v.Verdict = VerdictNoDifference
		}
		if n, ok := v.RunsToDetect(r.EffectMS); ok {
			more := max(n-v.Runs, 0)
			v.RunsForEffect, v.MoreRunsForEffect = &n, &more
		}
		if r.Experiment {
			v.judgeExperiment(d.MS, lo, hi, r.EffectMS)
		}
	}
	v.Text = v.text()
	return v
}

// ExperimentVerdict is an experiment's reading of H3 − H2: the confidence
// sequence's interval at the runs so far, around the same estimate and
// with the standard error the bootstrap's interval implies.
type ExperimentVerdict struct {
	CILowMS  float64 `json:"ci_low_ms"`
	CIHighMS float64 `json:"ci_high_ms"`
	// Multiplier is the sequence's factor on the standard error at these
	// runs, where one look's interval has z₀.₉₇₅ ≈ 1.96.
	Multiplier float64 `json:"multiplier"`
	// OneLook is the verdict one look's interval gives, for comparison.
	OneLook string `json:"one_look"`
	// RunsToDecide is about how many runs in all the sequence needs to
	// decide an effect of EffectMS (stats.Sequence.RunsToDecide);
	// MoreRunsToDecide how many beyond Runs. Null without a count.
	RunsToDecide     *int `json:"runs_to_decide"`
	MoreRunsToDecide *int `json:"more_runs_to_decide"`
}

// judgeExperiment replaces v's one-look verdict with the confidence
// sequence's at v.Runs, for the estimate diff whose one-look interval is
// [lo, hi].
func (v *Verdict) judgeExperiment(diff, lo, hi, effect float64) {
	var seq stats.Sequence
	se := stats.SE(lo, hi)
	elo, ehi := seq.Interval(diff, se, v.Runs)
	e := &ExperimentVerdict{CILowMS: Round3(elo), CIHighMS: Round3(ehi), Multiplier: Round3(seq.Multiplier(v.Runs)), OneLook: v.Verdict}
	if n, ok := seq.RunsToDecide(se, v.Runs, effect); ok {
		more := max(n-v.Runs, 0)
		e.RunsToDecide, e.MoreRunsToDecide = &n, &more
	}
	switch stats.DecideSequence(elo, ehi, effect) {
	case stats.SeqFaster:
		v.Verdict = VerdictFaster
	case stats.SeqSlower:
		v.Verdict = VerdictSlower
	case stats.NoneOfInterest:
		v.Verdict = VerdictNoDifference
	default:
		v.Verdict = VerdictKeepGoing
	}
	v.Experiment = e
}

// MDEAt is the minimum detectable effect, in ms, that runs runs would
// give (stats.MDEAt). ok is false without an MDE.
func (v *Verdict) MDEAt(runs int) (ms float64, ok bool) {
	if v.MDEMS == nil {
		return 0, false
	}
	return stats.MDEAt(*v.MDEMS, v.Runs, runs)
}

// RunsToDetect is how many runs in all would detect a difference of
// effectMS (either sign) with 80 % power at the verdict's percentile
// (stats.RunsToDetect), never fewer than an interval needs. ok is false
// without an MDE, or when stats.RunsToDetect has no count.
func (v *Verdict) RunsToDetect(effectMS float64) (runs int, ok bool) {
	if v.MDEMS == nil {
		return 0, false
	}
	n, ok := stats.RunsToDetect(*v.MDEMS, v.Runs, effectMS)
	if !ok {
		return 0, false
	}
	return max(n, v.RunsForInterval), true
}

// text says v in one line, e.g. "AS: HTTP/3 faster at p95 by 146 ms (95 %
// CI 120–171 ms), 4 210 runs".
func (v *Verdict) text() string {
	if v.Experiment != nil {
		return v.experimentText()
	}
	at := "p" + strconv.FormatFloat(v.P, 'f', -1, 64)
	runs := GroupDigits(v.Runs) + " runs"
	switch v.Verdict {
	case VerdictFaster, VerdictSlower:
		word, lo, hi := "faster", -*v.CIHighMS, -*v.CILowMS
		if v.Verdict == VerdictSlower {
			word, lo, hi = "slower", *v.CILowMS, *v.CIHighMS
		}
		return fmt.Sprintf("%s: HTTP/3 %s at %s by %s ms (95 %% CI %s–%s ms), %s",
			v.Group, word, at, roughMS(math.Abs(*v.DiffMS)), roughMS(lo), roughMS(hi), runs)
	case VerdictNoDifference:
		s := fmt.Sprintf("%s: no difference detectable at %s (H3 − H2 %s ms, 95 %% CI %s to %s ms), %s; "+
			"with these runs the smallest detectable difference is ±%s ms",
			v.Group, at, signedRough(*v.DiffMS), signedRough(*v.CILowMS), signedRough(*v.CIHighMS), runs, roughMS(*v.MDEMS))
		if v.MoreRunsForEffect != nil {
			if *v.MoreRunsForEffect > 0 {
				s += fmt.Sprintf("; ~%s more runs would detect %s ms", GroupDigits(twoSignificant(*v.MoreRunsForEffect)), roughMS(v.EffectMS))
			} else {
				s += fmt.Sprintf(", below %s ms", roughMS(v.EffectMS))
			}
		}
		return s
	case VerdictNoHTTP3:
		a := v.availability
		ci := ""
		if a.CILow != nil && a.CIHigh != nil {
			ci = fmt.Sprintf(" (95 %% CI of the share %.1f–%.1f %%)", 100**a.CILow, 100**a.CIHigh)
		}
		return fmt.Sprintf("%s: HTTP/3 never used: none of %s %s to the HTTP/3 origin used h3%s, so there is nothing to compare; "+
			"more runs will not change that while QUIC does not get through", v.Group, GroupDigits(a.WantedH3), availabilityUnit(a), ci)
	case VerdictNoInterval:
		if v.DiffMS == nil {
			return fmt.Sprintf("%s: no interval at %s, so no verdict", v.Group, at)
		}
		return fmt.Sprintf("%s: H3 − H2 at %s %s ms; no interval, so no verdict", v.Group, at, signedRough(*v.DiffMS))
	}
	return fmt.Sprintf("%s: not enough runs yet for a verdict at %s: %s with both protocols, %s needed (%s more)",
		v.Group, at, runs, GroupDigits(v.RunsForInterval), GroupDigits(v.MoreRunsForInterval))
}

// experimentText says an experiment's verdict in one line, e.g. "AS:
// HTTP/3 faster at p95 by 146 ms (experiment: anytime-valid 95 % CI
// 110–182 ms), 4 210 runs".
func (v *Verdict) experimentText() string {
	at := "p" + strconv.FormatFloat(v.P, 'f', -1, 64)
	runs := GroupDigits(v.Runs) + " runs"
	e := v.Experiment
	ci := fmt.Sprintf("anytime-valid 95 %% CI %s to %s ms", signedRough(e.CILowMS), signedRough(e.CIHighMS))
	switch v.Verdict {
	case VerdictFaster, VerdictSlower:
		word := "faster"
		if v.Verdict == VerdictSlower {
			word = "slower"
		}
		return fmt.Sprintf("%s: HTTP/3 %s at %s by %s ms (experiment: %s), %s",
			v.Group, word, at, roughMS(math.Abs(*v.DiffMS)), ci, runs)
	case VerdictNoDifference:
		return fmt.Sprintf("%s: no difference of %s ms or more at %s (experiment: H3 − H2 %s ms, %s), %s",
			v.Group, roughMS(v.EffectMS), at, signedRough(*v.DiffMS), ci, runs)
	}
	s := fmt.Sprintf("%s: keep going at %s (experiment: H3 − H2 %s ms, %s), %s", v.Group, at, signedRough(*v.DiffMS), ci, runs)
	switch {
	case e.MoreRunsToDecide == nil:
	case *e.MoreRunsToDecide > 0:
		s += fmt.Sprintf("; ~%s more runs to decide %s ms", GroupDigits(twoSignificant(*e.MoreRunsToDecide)), roughMS(v.EffectMS))
	default: // the difference, if any, is smaller than the effect of interest, and not yet ruled out
		s += fmt.Sprintf("; these runs would decide %s ms", roughMS(v.EffectMS))
	}
	return s
}

// verdictRuleText states the power rule and what it means across n
// judged groups; for an experiment, the confidence sequence instead.
func verdictRuleText(n int, experiment bool) string {
	if experiment {
		return "an experiment: each group judged at its own anytime-valid 95 % interval (a confidence sequence), " +
			"which holds however often the report is read, so a verdict may be acted on when it appears; " +
			"keep going until it decides"
	}
	zLevel, zPower := stats.Z()
	s := fmt.Sprintf("each group judged at its own 95 %% interval; smallest detectable difference at 80 %% power = "+
		"(%.2f + %.2f) × SE, SE = interval width / %.2f, shrinking as 1/√runs", zLevel, zPower, 2*zLevel)
	if n > 1 {
		s += fmt.Sprintf("; were there no real difference anywhere, about %s of these %d verdicts could still read faster or slower",
			strconv.FormatFloat(math.Round((1-VerdictLevel)*float64(n)*10)/10, 'f', -1, 64), n)
	}
	// One look's 5 % holds for one reading; watched as runs arrive, a null
	// difference reads faster or slower at some look far more often.
	return s + "; for one reading: at each reading a verdict is false 5 % of the time, so a report read again as runs arrive " +
		"errs more often over all its readings (watch an experiment instead: --experiment, from a fixed --since)"
}

// roughMS formats a duration for a sentence: whole ms from 10 ms on, a
// decimal below.
func roughMS(v float64) string {
	if math.Abs(v) >= 9.95 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// signedRough is roughMS with an explicit sign (a minus sign, not a
// hyphen).
func signedRough(v float64) string {
	s := roughMS(math.Abs(v))
	switch {
	case strings.Trim(s, "0.") == "":
		return s
	case v < 0:
		return "−" + s
	}
	return "+" + s
}

// GroupDigits writes a count with its digits in groups of three,
// separated by spaces (SI style: 4 210, 12 500).
func GroupDigits(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// twoSignificant rounds n to two significant digits (2 437 → 2 400): a
// run count that scales an estimate is no more precise than that.
func twoSignificant(n int) int {
	if n < 100 {
		return n
	}
	p := math.Pow(10, math.Floor(math.Log10(float64(n)))-1)
	return int(math.Round(float64(n)/p) * p)
}

// availabilityUnit names what an availability counts, for a sentence:
// "runs' H3 batches" (a complete report) or "requests" (an estimate).
func availabilityUnit(a *Availability) string {
	if a.Unit == "runs" {
		return "runs' H3 batches"
	}
	return "requests"
}

// ByEffect is the verdicts in the order a reader wants them: the decided
// (faster, slower) first, then those judged without a decision, then those
// not judged (too few runs, no interval, no HTTP/3); within each, the
// largest difference first, either way.
func ByEffect(vs []Verdict) []Verdict {
	out := slices.Clone(vs)
	rank := func(v Verdict) int {
		switch v.Verdict {
		case VerdictFaster, VerdictSlower:
			return 0
		case VerdictNoDifference, VerdictKeepGoing:
			return 1
		}
		return 2
	}
	size := func(v Verdict) float64 {
		if v.DiffMS == nil {
			return -1
		}
		return math.Abs(*v.DiffMS)
	}
	slices.SortStableFunc(out, func(a, b Verdict) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(size(b), size(a)))
	})
	return out
}
