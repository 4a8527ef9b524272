package model

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidOptions wraps every validation error of Options and of the
// options read from a URL or flags (queries/params); a CLI answers it with
// exit status 2, HTTP with 400.
var ErrInvalidOptions = errors.New("invalid report options")

// groupings lists the values Options.By accepts.
var groupings = []string{"continent", "country", "subdivision", "asn", "browser", "connection", "collector", "none"}

// Groupings returns the values Options.By accepts, in display order.
func Groupings() []string { return slices.Clone(groupings) }

// Source says where point estimates come from.
type Source string

// Sources of point estimates.
const (
	// SourceAuto uses the hourly rollup when it can answer (default
	// filters, grouping by continent, country or none) and raw rows
	// otherwise. With the rollup the window still ends at Until: the
	// partial hours at its edges come from unaggregated rows, the runs
	// table's (sorted by hour, so only those hours are read).
	SourceAuto Source = ""
	// SourceRaw always reads raw samples.
	SourceRaw Source = "raw"
	// SourceRollup requires the rollup; Run fails when it cannot answer.
	SourceRollup Source = "rollup"
)

// Defaults of Options.
const (
	DefaultBy              = "continent"
	DefaultWindow          = 24 * time.Hour
	DefaultMinRuns         = 30
	DefaultReplicates      = 1000
	MaxReplicates          = 10000      // a report's bootstrap costs time in proportion
	DefaultMaxRunsPerGroup = 3000       // twice what p99 needs for an interval: see MaxRunsPerGroup
	DefaultSeed            = 0x68337275 // "h3ru": reports are reproducible
)

// Options select what a report covers. The zero value plus Since is a
// valid default report; call Validate (Run does) to apply defaults.
type Options struct {
	// Since and Until bound the window [Since, Until). Zero Until means
	// now; zero Since means Until − 24 h back to the start of its hour
	// (24 to 25 hours, every hour in the timeline a whole one).
	Since, Until time.Time
	// Site restricts the report to one data-site; "" means all sites.
	Site string
	// Continent and Country restrict the report to one continent or one
	// country, by the two-letter code it is grouped under (ISO 3166-1
	// alpha-2 for countries: "JP"; "AS" for Asia); "" means all. Validate
	// upper-cases them. They are the dashboard's drill-down.
	Continent, Country string
	// By is the grouping: continent (default), country, subdivision, asn,
	// browser, connection (navigator.connection.effectiveType) or none.
	By string
	// MinRuns marks groups with fewer runs as too small. Default 30.
	MinRuns int
	// IncludeWarmup, IncludeFailed and IncludeBots widen the default
	// selection (parallel batches of non-bot runs, successful requests).
	IncludeWarmup, IncludeFailed, IncludeBots bool
	// IncludeExcluded widens the selection past the like-for-like
	// headline: runs with exclusions (fallback, cold connection, failed or
	// short warm-up, partial, failed request, bot, unchecked) are counted
	// too. IncludeBots still decides about bots.
	IncludeExcluded bool
	// Design is the test design the report covers: runs of different
	// designs are never pooled. The zero Design means the most common one
	// in the window; ParseDesign reads "parallel,bytes,warmup,major[,name=value…]" or
	// "all" (pool every design, on request only).
	Design Design
	// Source chooses rollup or raw rows for point estimates. Default auto.
	Source Source
	// Agent reports the runs of `h3rum agent` instead of browsers': the
	// two are never pooled. The rollup holds browser runs only, so an
	// agent report reads raw rows (Source auto becomes raw).
	Agent bool
	// Replicates is the number of bootstrap replicates for confidence
	// intervals. 0 means DefaultReplicates; negative disables intervals.
	Replicates int
	// MaxRunsPerGroup caps the runs per group fetched for the bootstrap
	// and the paired view (a uniform hash sample of runs beyond it).
	// Intervals are computed on the fetched runs, so the cap must hold what
	// the highest percentile needs under the sufficiency rule (MinTailRuns:
	// 1500 runs for p99); a lower one is refused. The default is twice
	// that, so that in a thinned group the protocol with fewer runs (H3
	// when many runs fell back to h2) keeps p99 too, up to half of them
	// missing. Groups up to the cap also get exact percentiles (below
	// ExactBelowSamples samples). 0 means DefaultMaxRunsPerGroup.
	MaxRunsPerGroup int
	// Seed seeds the bootstrap; 0 means DefaultSeed.
	Seed uint64
	// VerdictP is the percentile the verdicts judge (VerdictRule), one of
	// the report's. 0 means DefaultVerdictP (95).
	VerdictP float64
	// EffectMS is the difference, in ms, for which each verdict says how
	// many more runs would detect it, MinEffectMS to MaxEffectMS. 0 means
	// DefaultEffectMS (10).
	EffectMS float64
	// Experiment makes the window an experiment that started at Since (a
	// fixed time, which params.OptionsFromValues requires): its verdicts
	// hold at any number of looks (VerdictRule.Experiment), for a report that is
	// read again as runs arrive.
	Experiment bool
	// Headline computes the headline alone: the point estimates, the runs
	// (intervals, the paired view, the verdicts), the timeline and the
	// excluded runs (availability per run). The intention-to-treat view,
	// failures, handshakes, NEL, the distribution curves, the trend, script
	// errors and first contact are left out: what the dashboard's map
	// needs, at a fraction of the complete report's time.
	Headline bool
	// Now is the reference for a zero Until; zero means time.Now().
	Now time.Time
}

// InvalidOptions is an ErrInvalidOptions error that says why, so that
// every reader of options refuses them in one form.
func InvalidOptions(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
}

// Validate applies defaults and checks o as a whole.
func (o *Options) Validate() error {
	if err := o.validateWindow(); err != nil {
		return err
	}
	if err := o.validateSelection(); err != nil {
		return err
	}
	return o.validateStatistics()
}

// validateWindow defaults and checks Since and Until.
func (o *Options) validateWindow() error {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	if o.Until.IsZero() {
		o.Until = now
	}
	if o.Experiment && o.Since.IsZero() {
		return InvalidOptions("an experiment needs its start: give since as a time (such as 2025-01-01T00:00:00Z)")
	}
	if o.Since.IsZero() {
		// Back to the start of that hour: the timeline's first hour is a
		// whole one, not a dip, and the rollup answers every hour without
		// reading a partial one's raw rows.
		o.Since = o.Until.Add(-DefaultWindow).UTC().Truncate(time.Hour)
	}
	// Rows carry whole seconds (a row at second S arrived in [S, S+1)), so
	// the end rounds up: a report "until now" includes the current second.
	o.Since, o.Until = o.Since.UTC().Truncate(time.Second), o.Until.UTC().Add(time.Second-1).Truncate(time.Second)
	if !o.Until.After(o.Since) {
		return InvalidOptions("until (%s) must be after since (%s)", o.Until.Format(time.RFC3339), o.Since.Format(time.RFC3339))
	}
	if o.Since.Unix() < 0 || o.Until.Unix() > 1<<32-1 {
		return InvalidOptions("window %s – %s is outside 1970–2106", o.Since.Format(time.RFC3339), o.Until.Format(time.RFC3339))
	}
	return nil
}

// validateSelection defaults and checks what the report selects and how
// it groups it.
func (o *Options) validateSelection() error {
	for _, f := range []struct {
		name string
		code *string
	}{{"continent", &o.Continent}, {"country", &o.Country}} {
		*f.code = strings.ToUpper(*f.code)
		if *f.code != "" && !IsPlaceCode(*f.code) {
			return InvalidOptions("%s %q is not a two-letter code (such as JP or AS)", f.name, *f.code)
		}
	}
	if o.By == "" {
		o.By = DefaultBy
	}
	if !slices.Contains(groupings, o.By) {
		return InvalidOptions("unknown grouping %q (want one of %s)", o.By, strings.Join(groupings, ", "))
	}
	if o.MinRuns == 0 {
		o.MinRuns = DefaultMinRuns
	}
	if o.MinRuns < 0 {
		return InvalidOptions("min-runs %d must not be negative", o.MinRuns)
	}
	switch o.Source {
	case SourceAuto, SourceRaw, SourceRollup:
	default:
		return InvalidOptions("unknown source %q (want raw or rollup)", o.Source)
	}
	if o.Agent {
		if o.Source == SourceRollup {
			return InvalidOptions("the rollup holds browser runs only; an agent report reads raw rows")
		}
		o.Source = SourceRaw
	}
	return nil
}

// validateStatistics defaults and checks the bootstrap and the verdicts'
// settings.
func (o *Options) validateStatistics() error {
	if o.Replicates == 0 {
		o.Replicates = DefaultReplicates
	}
	if o.Replicates > MaxReplicates {
		return InvalidOptions("replicates %d is more than %d", o.Replicates, MaxReplicates)
	}
	if o.MaxRunsPerGroup == 0 {
		o.MaxRunsPerGroup = DefaultMaxRunsPerGroup
	}
	if need := minRunCap(); o.MaxRunsPerGroup < need {
		return InvalidOptions("max runs per group %d is below the %d runs p%g needs for an interval (%s)",
			o.MaxRunsPerGroup, need, percentiles[len(percentiles)-1], SufficiencyText())
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.VerdictP == 0 {
		o.VerdictP = DefaultVerdictP
	}
	if !slices.Contains(percentiles[:], o.VerdictP) {
		return InvalidOptions("verdict percentile %g is not one of the report's (%s)", o.VerdictP, PercentileList())
	}
	if o.EffectMS == 0 {
		o.EffectMS = DefaultEffectMS
	}
	if !(o.EffectMS >= MinEffectMS && o.EffectMS <= MaxEffectMS) {
		return InvalidOptions("effect-ms %g is outside %g to %d ms: the difference the verdicts' run counts are for", o.EffectMS, MinEffectMS, MaxEffectMS)
	}
	return nil
}

// IsPlaceCode reports whether s is two ASCII capital letters, the form of
// every continent and country code the collector stores.
func IsPlaceCode(s string) bool {
	return len(s) == 2 && 'A' <= s[0] && s[0] <= 'Z' && 'A' <= s[1] && s[1] <= 'Z'
}

// PercentileList names the report's percentiles: "50, 75, 90, 95, 99".
func PercentileList() string {
	s := make([]string, len(percentiles))
	for i, p := range percentiles {
		s[i] = strconv.FormatFloat(p, 'f', -1, 64)
	}
	return strings.Join(s, ", ")
}

// verdictRule is the power rule's configuration of the report o makes.
func (o *Options) verdictRule() VerdictRule {
	return VerdictRule{P: o.VerdictP, EffectMS: o.EffectMS, MinRuns: o.MinRuns, Experiment: o.Experiment}
}

// VerdictPercentile is the percentile the verdicts of o's report judge,
// its default resolved.
func (o *Options) VerdictPercentile() float64 { return o.verdictRule().withDefaults().P }
