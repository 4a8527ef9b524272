// Package params reads a report's options from a URL's parameters and a
// command's flags, one table for both, and writes them back as links.
package params

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/h3rum/h3rum/queries/model"
)

// option is one report option, read alike from a command line
// (`h3rum report --min-runs 10`) and from a URL (/api/report?min-runs=10).
type option struct {
	// name is the canonical name, the flag and the URL parameter; aliases
	// are the URL parameter names it had before, still accepted there.
	name    string
	aliases []string
	// of names the option this one sets under another form (raw is
	// source=raw): the two are one option, given once.
	of string
	// boolean options are switches on the command line (--agent alone
	// means true).
	boolean bool
	// baseline options belong to a comparison, not to a report:
	// OptionsFromValues refuses them.
	baseline bool
	// def is the default as -h shows it, "" for none; usage describes the
	// option, a `backquoted` word naming its value.
	def, usage string
	set        func(r *Request, val string) error
	// get is the option's value in the dashboard's links, "" to leave it
	// out; nil for an option the links never carry.
	get func(o *model.Options) string
}

// optionTable lists the report's options, then a comparison's.
var optionTable = []option{
	{name: "since", usage: "start of the window, a `time`: a duration before now (\"24h\", \"7d\"), RFC 3339, or a date (default: 24 h before --until, back to the start of its hour)",
		set: func(r *Request, s string) (err error) { r.Options.Since, err = ParseTime(s, r.Options.Now); return },
		get: func(o *model.Options) string { return o.Since.Format(time.RFC3339) }},
	{name: "until", def: "now", usage: "end of the window, a `time` as for --since",
		set: func(r *Request, s string) (err error) { r.Options.Until, err = ParseTime(s, r.Options.Now); return },
		get: func(o *model.Options) string { return o.Until.Format(time.RFC3339) }},
	{name: "site", usage: "only this data-`site` (default: all)",
		set: func(r *Request, s string) error { r.Options.Site = s; return nil },
		get: func(o *model.Options) string { return o.Site }},
	{name: "continent", usage: "only this continent, by its two-letter `code` such as EU or AS (default: all)",
		set: func(r *Request, s string) error { r.Options.Continent = s; return nil },
		get: func(o *model.Options) string { return o.Continent }},
	{name: "country", usage: "only this country, by its ISO 3166-1 alpha-2 `code` such as JP (default: all)",
		set: func(r *Request, s string) error { r.Options.Country = s; return nil },
		get: func(o *model.Options) string { return o.Country }},
	{name: "by", def: model.DefaultBy, usage: "`grouping`: " + strings.Join(model.Groupings(), ", ") + " (collector: the POP whose probe served the samples)",
		set: func(r *Request, s string) error { r.Options.By = s; return nil },
		get: func(o *model.Options) string { return o.By }},
	{name: "min-runs", aliases: []string{"min_runs"}, def: strconv.Itoa(model.DefaultMinRuns), usage: "groups with fewer `runs` are marked too small",
		set: func(r *Request, s string) (err error) { r.Options.MinRuns, err = parseInt(s); return },
		get: func(o *model.Options) string {
			return unless(o.MinRuns == model.DefaultMinRuns, strconv.Itoa(o.MinRuns))
		}},
	{name: "include-warmup", aliases: []string{"warmup"}, boolean: true, usage: "include warm-up requests",
		set: func(r *Request, s string) (err error) { r.Options.IncludeWarmup, err = parseBool(s); return },
		get: func(o *model.Options) string { return unless(!o.IncludeWarmup, "1") }},
	{name: "include-failed", aliases: []string{"failed"}, boolean: true, usage: "include failed requests in the percentiles",
		set: func(r *Request, s string) (err error) { r.Options.IncludeFailed, err = parseBool(s); return },
		get: func(o *model.Options) string { return unless(!o.IncludeFailed, "1") }},
	{name: "include-bots", aliases: []string{"bots"}, boolean: true, usage: "include runs from headless or automated browsers",
		set: func(r *Request, s string) (err error) { r.Options.IncludeBots, err = parseBool(s); return },
		get: func(o *model.Options) string { return unless(!o.IncludeBots, "1") }},
	{name: "include-excluded", aliases: []string{"excluded"}, boolean: true, usage: "widen past the like-for-like headline: include runs with exclusions (fallback, cold, failed warm-up, …)",
		set: func(r *Request, s string) (err error) { r.Options.IncludeExcluded, err = parseBool(s); return },
		get: func(o *model.Options) string { return unless(!o.IncludeExcluded, "1") }},
	{name: "experiment", boolean: true, usage: "the window is an experiment that started at --since (a time, not a duration): verdicts hold however often the report is read",
		set: func(r *Request, s string) (err error) { r.Options.Experiment, err = parseBool(s); return },
		get: func(o *model.Options) string { return unless(!o.Experiment, "1") }},
	{name: "design", usage: "test `design` \"parallel,bytes,warmup,major[,name=value…]\" (e.g. 5,0,2,1), or \"all\" to pool designs (default: the most common)",
		set: func(r *Request, s string) (err error) { r.Options.Design, err = model.ParseDesign(s); return },
		get: func(o *model.Options) string { return unless(!o.Design.Set && !o.Design.All, o.Design.String()) }},
	{name: "source", usage: "`source` of the point estimates: raw (raw rows) or rollup (the hourly rollup; refused where it cannot answer) (default: the rollup where it can answer, raw rows otherwise)",
		set: func(r *Request, s string) error { r.Options.Source = model.Source(s); return nil },
		get: func(o *model.Options) string { return unless(o.Agent, string(o.Source)) }},
	{name: "raw", of: "source", boolean: true, usage: "the same as --source raw",
		set: func(r *Request, s string) error {
			raw, err := parseBool(s)
			if raw {
				r.Options.Source = model.SourceRaw
			}
			return err
		}},
	{name: "agent", boolean: true, usage: "report the runs of h3rum agent (with its full, resumed and 0-RTT handshakes) instead of browsers'; never pooled",
		set: func(r *Request, s string) (err error) { r.Options.Agent, err = parseBool(s); return },
		get: func(o *model.Options) string { return unless(!o.Agent, "1") }},
	{name: "replicates", def: strconv.Itoa(model.DefaultReplicates), usage: fmt.Sprintf("the `number` of bootstrap replicates for the confidence intervals, at most %d; negative: no intervals", model.MaxReplicates),
		set: func(r *Request, s string) (err error) { r.Options.Replicates, err = parseInt(s); return }},
	{name: "verdict-p", aliases: []string{"verdict_p"}, def: strconv.FormatFloat(model.DefaultVerdictP, 'f', -1, 64), usage: "the `percentile` the verdicts judge: " + model.PercentileList(),
		set: func(r *Request, s string) (err error) { r.Options.VerdictP, err = parseFloat(s); return },
		get: func(o *model.Options) string {
			return unless(o.VerdictP == 0 || o.VerdictP == model.DefaultVerdictP, strconv.FormatFloat(o.VerdictP, 'f', -1, 64))
		}},
	{name: "effect-ms", aliases: []string{"effect_ms"}, def: strconv.FormatFloat(model.DefaultEffectMS, 'f', -1, 64), usage: "the difference, in `ms`, for which each verdict says how many more runs would detect it",
		set: func(r *Request, s string) (err error) { r.Options.EffectMS, err = parseFloat(s); return },
		get: func(o *model.Options) string {
			return unless(o.EffectMS == 0 || o.EffectMS == model.DefaultEffectMS, strconv.FormatFloat(o.EffectMS, 'f', -1, 64))
		}},
	{name: "headline", boolean: true, usage: "compute the headline alone: estimates, intervals, verdicts, timeline and excluded runs (what the dashboard's map needs)",
		set: func(r *Request, s string) (err error) { r.Options.Headline, err = parseBool(s); return },
		get: func(o *model.Options) string { return unless(!o.Headline, "1") }},
	{name: "baseline-since", aliases: []string{"baseline_since"}, baseline: true,
		usage: "compare with a baseline window starting at this `time` (as --since): per group, how H3 − H2 at --verdict-p changed (default with --baseline-until: the same length before it)",
		set:   func(r *Request, s string) error { r.baseSince = s; return nil }},
	{name: "baseline-until", aliases: []string{"baseline_until"}, baseline: true,
		usage: "end of the baseline window, a `time` (default with --baseline-since or alone: the start of the report's window)",
		set:   func(r *Request, s string) error { r.baseUntil = s; return nil }},
}

// optionNamed finds an option by any of its names (TestOptionSpellings:
// no name is two options').
var optionNamed = func() map[string]*option {
	m := map[string]*option{}
	for i := range optionTable {
		o := &optionTable[i]
		for _, n := range append([]string{o.name}, o.aliases...) {
			m[n] = o
		}
	}
	return m
}()

// unless is s, or "" when omit holds.
func unless(omit bool, s string) string {
	if omit {
		return ""
	}
	return s
}

// canonical is the option o is given as: its own name, or the one it sets.
func (o *option) canonical() string {
	if o.of != "" {
		return o.of
	}
	return o.name
}

// A Request is what a command line or a URL asks for: a report or, with a
// baseline window, a comparison.
type Request struct {
	Options model.Options // validated
	// Compare is set when a baseline option was given: the request
	// compares Options' window (after) with [BaselineSince, BaselineUntil)
	// (before). The baseline window is set either way (BaselineWindow).
	Compare                      bool
	BaselineSince, BaselineUntil time.Time

	baseSince, baseUntil string // as given
}

// RequestFromValues reads what OptionsFromValues reads and a comparison's
// baseline window: baseline-since and baseline-until, ParseTime's times.
func RequestFromValues(v url.Values, now time.Time) (Request, error) {
	return readValues(v, now, true)
}

// OptionsFromValues reads a report's options from URL query parameters,
// by any of their names (optionTable): since, until, site, continent,
// country, by, min-runs, include-warmup, include-failed, include-bots,
// include-excluded (booleans: 1/0/true/false), design, source, raw, agent,
// replicates, verdict-p, effect-ms and headline. Unknown parameters are
// errors, so typos do not silently widen a report, and so is an option
// given twice, under one name or two; token, the dashboard's credential, is
// left to the handler.
func OptionsFromValues(v url.Values, now time.Time) (model.Options, error) {
	r, err := readValues(v, now, false)
	return r.Options, err
}

func readValues(v url.Values, now time.Time, baseline bool) (Request, error) {
	r := Request{Options: model.Options{Now: now}}
	given := map[string]string{} // the name each option was given under, by canonical name
	keys := slices.Sorted(maps.Keys(v))
	for _, key := range keys {
		if n := len(v[key]); n != 1 {
			return r, model.InvalidOptions("parameter %s given %d times", key, n)
		}
		if key == "token" {
			continue // the dashboard's first-load credential, checked by the handler
		}
		opt := optionNamed[key]
		if opt == nil || (opt.baseline && !baseline) {
			return r, model.InvalidOptions("unknown parameter %q", key)
		}
		if other, ok := given[opt.canonical()]; ok {
			return r, model.InvalidOptions("parameters %s and %s are one option: give one", other, key)
		}
		given[opt.canonical()] = key
	}
	for _, key := range keys {
		if opt := optionNamed[key]; opt != nil {
			if err := opt.set(&r, v[key][0]); err != nil {
				return r, &optionError{name: key, value: v[key][0], err: err}
			}
		}
	}
	if since, ok := given["since"]; ok && r.Options.Experiment {
		// A start relative to now moves with every look: no experiment.
		if s := strings.TrimSpace(v[since][0]); s == "now" || isAgo(s) {
			return r, model.InvalidOptions("an experiment starts at a time, not %q before now: give since as a time (such as 2025-01-01T00:00:00Z)", s)
		}
	}
	if err := r.Options.Validate(); err != nil {
		return r, err
	}
	if !baseline {
		return r, nil
	}
	_, since := given["baseline-since"]
	_, until := given["baseline-until"]
	r.Compare = since || until
	var err error
	r.BaselineSince, r.BaselineUntil, err = BaselineWindow(r.Options, r.baseSince, r.baseUntil, now)
	return r, err
}

// Values is o as URL parameters, the inverse of OptionsFromValues: what
// the dashboard's links to itself carry (Query encodes them).
func Values(o *model.Options) url.Values {
	v := url.Values{}
	for _, opt := range optionTable {
		if opt.get != nil {
			if s := opt.get(o); s != "" {
				v.Set(opt.name, s)
			}
		}
	}
	return v
}

// notA is a value that is not of its option's kind: "an integer".
type notA string

func (k notA) Error() string { return "not " + string(k) }

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, notA("an integer")
	}
	return n, nil
}

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, notA("a number")
	}
	return f, nil
}

func parseBool(s string) (bool, error) {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, notA("a boolean (1/0/true/false)")
	}
	return b, nil
}

// optionError is a value one option cannot take, under the name it was
// given: `min-runs: "many" is not an integer` for the API, `--min-runs
// "many": not an integer` for a command line.
type optionError struct {
	name, value string
	err         error
	flag        bool // named as a command line's flag
}

func (e *optionError) Error() string {
	reason := strings.TrimPrefix(e.err.Error(), model.ErrInvalidOptions.Error()+": ")
	var kind notA
	switch {
	case e.flag:
		return fmt.Sprintf("--%s %q: %s", e.name, e.value, reason)
	case errors.As(e.err, &kind):
		return fmt.Sprintf("%v: %s: %q is %s", model.ErrInvalidOptions, e.name, e.value, reason)
	}
	// ParseTime and model.ParseDesign name the value they could not read.
	return fmt.Sprintf("%v: %s", model.ErrInvalidOptions, reason)
}

func (e *optionError) Is(target error) bool { return target == model.ErrInvalidOptions }

// Flags are the report's options, and a comparison's baseline window, as
// the flags of a command: each option's canonical name is a flag
// (--include-bots; its URL alias bots is not). Two flags of one option
// (--raw and --source) are refused as two parameters of one are.
type Flags struct {
	given map[string]string // value by flag name
}

// RegisterFlags defines the options' flags on fs; after fs is parsed,
// Request reads them as RequestFromValues reads a URL.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{given: map[string]string{}}
	for i := range optionTable {
		opt := &optionTable[i]
		// The aliases are the API's earlier parameter names: a URL's
		// spelling, never a flag (as flags they would also read
		// environment variables another command has, H3RUM_WARMUP).
		fs.Var(&flagValue{f, opt}, opt.name, opt.usage)
	}
	return f
}

// Values are the options given, under their flags' names.
func (f *Flags) Values() url.Values {
	v := url.Values{}
	for name, val := range f.given {
		v.Set(name, val)
	}
	return v
}

// Request reads the options given; a bad value is reported as its flag:
// `--since "soon": cannot parse time "soon" (…)`.
func (f *Flags) Request(now time.Time) (Request, error) {
	r, err := RequestFromValues(f.Values(), now)
	var oe *optionError
	if errors.As(err, &oe) {
		oe.flag = true
	}
	return r, err
}

// flagValue is an option as a flag.Value; the last value given wins.
type flagValue struct {
	f   *Flags
	opt *option
}

func (v *flagValue) String() string {
	if v.opt == nil {
		return "" // flag's zero value, for PrintDefaults
	}
	if val, ok := v.f.given[v.opt.name]; ok {
		return val
	}
	return v.opt.def
}

func (v *flagValue) Set(s string) error {
	v.f.given[v.opt.name] = s
	return nil
}

func (v *flagValue) IsBoolFlag() bool { return v.opt.boolean }

// Query is o as URL parameters, the inverse of OptionsFromValues: the
// dashboard's links to itself with other options.
func Query(o *model.Options) string { return Values(o).Encode() }
