package queries

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/synth"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", time.Time{}, false},
		{"now", now, false},
		{"24h", now.Add(-24 * time.Hour), false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"7d", now.Add(-7 * 24 * time.Hour), false},
		{"1d12h", now.Add(-36 * time.Hour), false},
		{"2w", now.Add(-14 * 24 * time.Hour), false},
		{"2025-03-01", time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), false},
		{"2025-03-01T10:00:00Z", time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC), false},
		{"2025-03-01T10:00:00+02:00", time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC), false},
		{"2025-03-01 10:30", time.Date(2025, 3, 1, 10, 30, 0, 0, time.UTC), false},
		{"yesterday", time.Time{}, true},
		{"-5h", time.Time{}, true},
		{"5x", time.Time{}, true},
		{"2025-13-01", time.Time{}, true},
	} {
		got, err := ParseTime(tc.in, now)
		if tc.err {
			if err == nil || !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("ParseTime(%q) = %v, %v; want an ErrInvalidOptions error", tc.in, got, err)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	o := Options{Now: now}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if !o.Until.Equal(now) || !o.Since.Equal(now.Add(-24*time.Hour)) || o.By != "continent" || o.MinRuns != 30 || o.Replicates != DefaultReplicates {
		t.Errorf("defaults not applied: %+v", o)
	}
	// The default window starts on the hour: 24 h before until, back to
	// the start of that hour.
	o = Options{Now: now.Add(34*time.Minute + 56*time.Second)}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if want := now.Add(-24 * time.Hour); !o.Since.Equal(want) || !o.Until.Equal(now.Add(34*time.Minute+56*time.Second)) {
		t.Errorf("default window %s – %s, want %s – now", o.Since, o.Until, want)
	}
	for _, tc := range []struct {
		name string
		o    Options
		msg  string
	}{
		{"unknown by", Options{By: "planet"}, `unknown grouping "planet"`},
		{"until before since", Options{Since: now, Until: now.Add(-time.Hour)}, "must be after since"},
		{"empty window", Options{Since: now, Until: now}, "must be after since"},
		{"negative min runs", Options{MinRuns: -1}, "min-runs"},
		{"bad source", Options{Source: "cache"}, "unknown source"},
		{"verdict at no reported percentile", Options{VerdictP: 42}, "verdict percentile 42 is not one of the report's (50, 75, 90, 95, 99)"},
		{"negative effect", Options{EffectMS: -10}, "effect-ms -10 is outside 0.1 to 10000 ms"},
		{"effect not a number", Options{EffectMS: math.NaN()}, "effect-ms NaN"},
		{"effect below a timer's resolution", Options{EffectMS: 1e-300}, "effect-ms 1e-300 is outside 0.1 to 10000 ms"},
		{"effect beyond the request timeout", Options{EffectMS: 10000.5}, "effect-ms 10000.5"},
		{"effect infinite", Options{EffectMS: math.Inf(1)}, "effect-ms +Inf"},
	} {
		tc.o.Now = now
		err := tc.o.Validate()
		if err == nil || !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line containing %q", tc.name, err, tc.msg)
		}
	}
}

func TestOptionsFromValues(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	o, err := OptionsFromValues(url.Values{"since": {"7d"}, "by": {"country"}, "site": {"a.example"}, "warmup": {"1"}, "min_runs": {"10"},
		"excluded": {"1"}, "design": {"10,4096,3,1"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if o.By != "country" || o.Site != "a.example" || !o.IncludeWarmup || o.MinRuns != 10 || !o.Since.Equal(now.Add(-7*24*time.Hour)) ||
		!o.IncludeExcluded || o.Design != (Design{Parallel: 10, Bytes: 4096, Warmup: 3, BeaconMajor: 1, Set: true}) {
		t.Errorf("parsed %+v", o)
	}
	back, err := OptionsFromValues(o.values(), now)
	if err != nil || back.By != o.By || !back.Since.Equal(o.Since) || !back.IncludeWarmup || !back.IncludeExcluded || back.Design != o.Design {
		t.Errorf("values round trip: %+v, %v", back, err)
	}
	v, err := OptionsFromValues(url.Values{"verdict_p": {"50"}, "effect_ms": {"2.5"}}, now)
	if err != nil || v.VerdictP != 50 || v.EffectMS != 2.5 {
		t.Errorf("verdict_p=50&effect_ms=2.5: %v %v, %v", v.VerdictP, v.EffectMS, err)
	}
	if back, err := OptionsFromValues(v.values(), now); err != nil || back.VerdictP != 50 || back.EffectMS != 2.5 {
		t.Errorf("verdict options round trip: %+v, %v", back, err)
	}
	if d, _ := OptionsFromValues(url.Values{}, now); d.VerdictP != DefaultVerdictP || d.EffectMS != DefaultEffectMS || d.values().Has("verdict-p") {
		t.Errorf("verdict defaults: %v %v, in links: %v", d.VerdictP, d.EffectMS, d.values())
	}
	if all, err := OptionsFromValues(url.Values{"design": {"all"}}, now); err != nil || !all.Design.All {
		t.Errorf("design=all: %+v, %v", all.Design, err)
	} else if st, err := prepare("points_raw.sql", &all, window{}, nil); err != nil || !strings.Contains(st.sql, "AND (1 AND source = @source)") {
		t.Errorf("design=all pools every design: %v\n%s", err, st.sql)
	}
	for _, v := range []url.Values{
		{"by": {"x"}}, {"since": {"soon"}}, {"until": {"2020-01-01"}, "since": {"2021-01-01"}},
		{"min_runs": {"many"}}, {"bots": {"maybe"}}, {"colour": {"red"}}, {"by": {"country", "asn"}},
		{"design": {"5,0,2"}}, {"design": {"5,0,2,x"}}, {"design": {"5,0,-2,1"}}, {"design": {"1,2,3,4,5"}},
		{"design": {"5,0,2,1) OR (1=1"}}, {"design": {"5,0,2,1,gap=1' OR '1"}}, {"design": {"5,0,2,1,gap"}},
		{"design": {"5,0,2,1,Gap=1"}}, {"design": {"5,0,2,1,gap=1.5"}}, {"design": {"5,0,2,1,"}}, {"excluded": {"perhaps"}},
		{"verdict_p": {"p95"}}, {"verdict_p": {"96"}}, {"effect_ms": {"ten"}}, {"effect_ms": {"0x"}}, {"effect_ms": {"-Inf"}},
		{"effect_ms": {"1e-300"}}, {"effect-ms": {"NaN"}}, {"effect-ms": {"1e6"}},
		// Durations out of a Duration's range, which the conversion would
		// turn into anything.
		{"since": {"NaNd"}}, {"since": {"1e5w"}}, {"since": {"Infd"}}, {"until": {"1e300d"}}, {"since": {"--1d"}},
	} {
		if _, err := OptionsFromValues(v, now); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%v: err = %v, want ErrInvalidOptions", v, err)
		}
	}
}

// TestOptionSpellings: every name an option had, on the command line or
// in a URL, reads the same on both sides, and each option has one
// canonical name that the dashboard's links use.
func TestOptionSpellings(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		names []string // canonical first
		value string
		check func(o Options) bool
	}{
		{[]string{"min-runs", "min_runs"}, "10", func(o Options) bool { return o.MinRuns == 10 }},
		{[]string{"include-warmup", "warmup"}, "1", func(o Options) bool { return o.IncludeWarmup }},
		{[]string{"include-failed", "failed"}, "1", func(o Options) bool { return o.IncludeFailed }},
		{[]string{"include-bots", "bots"}, "1", func(o Options) bool { return o.IncludeBots }},
		{[]string{"include-excluded", "excluded"}, "1", func(o Options) bool { return o.IncludeExcluded }},
		{[]string{"source", "raw"}, "", func(o Options) bool { return o.Source == SourceRaw }},
		{[]string{"verdict-p", "verdict_p"}, "50", func(o Options) bool { return o.VerdictP == 50 }},
		{[]string{"effect-ms", "effect_ms"}, "2.5", func(o Options) bool { return o.EffectMS == 2.5 }},
		{[]string{"since"}, "7d", func(o Options) bool { return o.Since.Equal(now.Add(-7 * 24 * time.Hour)) }},
		{[]string{"until"}, "2025-03-09", func(o Options) bool { return o.Until.Equal(time.Date(2025, 3, 9, 0, 0, 0, 0, time.UTC)) }},
		{[]string{"site"}, "a.example", func(o Options) bool { return o.Site == "a.example" }},
		{[]string{"continent"}, "eu", func(o Options) bool { return o.Continent == "EU" }},
		{[]string{"country"}, "jp", func(o Options) bool { return o.Country == "JP" }},
		{[]string{"by"}, "asn", func(o Options) bool { return o.By == "asn" }},
		{[]string{"design"}, "5,0,2,1", func(o Options) bool { return o.Design == Design{Parallel: 5, Warmup: 2, BeaconMajor: 1, Set: true} }},
		{[]string{"design"}, "5,0,2,1,gap=100,x2=-3", func(o Options) bool {
			return o.Design == Design{Parallel: 5, Warmup: 2, BeaconMajor: 1, Extra: "gap=100,x2=-3", Set: true} && o.Design.String() == "5,0,2,1,gap=100,x2=-3"
		}},
		{[]string{"agent"}, "1", func(o Options) bool { return o.Agent && o.Source == SourceRaw }},
		{[]string{"replicates"}, "200", func(o Options) bool { return o.Replicates == 200 }},
		{[]string{"headline"}, "1", func(o Options) bool { return o.Headline }},
	} {
		for _, name := range tc.names {
			value := tc.value
			if name == "source" {
				value = "raw"
			} else if name == "raw" {
				value = "1"
			}
			o, err := OptionsFromValues(url.Values{name: {value}}, now)
			if err != nil || !tc.check(o) {
				t.Errorf("URL %s=%s: %+v, %v", name, value, o, err)
			}
			// A command line: --name value, or the switch alone; the
			// aliases are URL parameters only.
			if optionNamed[name].name != name {
				fs := flag.NewFlagSet("report", flag.ContinueOnError)
				fs.SetOutput(io.Discard)
				RegisterFlags(fs)
				if fs.Parse([]string{"--" + name}) == nil {
					t.Errorf("--%s is a flag: the aliases are URL parameters only", name)
				}
				continue
			}
			args := []string{"--" + name, value}
			if optionNamed[name].boolean {
				args = []string{"--" + name}
				if value != "1" {
					args = []string{"--" + name + "=" + value}
				}
			}
			fs := flag.NewFlagSet("report", flag.ContinueOnError)
			f := RegisterFlags(fs)
			if err := fs.Parse(args); err != nil {
				t.Errorf("flags %v: %v", args, err)
				continue
			}
			r, err := f.Request(now)
			if err != nil || r.Compare || !tc.check(r.Options) {
				t.Errorf("flags %v: %+v, %v", args, r.Options, err)
			}
			if name == tc.names[0] && optionNamed[name].get != nil && !o.values().Has(name) {
				t.Errorf("links of %s=%s: %v, want %s", name, value, o.values(), name)
			}
		}
	}
	names := 0
	for _, opt := range optionTable {
		names += 1 + len(opt.aliases)
	}
	if names != len(optionNamed) {
		t.Errorf("%d names for %d options: a name is two options'", names, len(optionNamed))
	}
	// Links carry canonical names only.
	o, err := OptionsFromValues(url.Values{"bots": {"1"}, "min_runs": {"5"}, "verdict_p": {"50"}, "effect_ms": {"3"}, "warmup": {"1"}, "failed": {"1"}, "excluded": {"1"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	for name := range o.values() {
		if optionNamed[name] == nil || optionNamed[name].name != name {
			t.Errorf("links carry %s, not a canonical name: %v", name, o.values())
		}
	}
	if got := len(o.values()); got != 10 {
		t.Errorf("links %v: %d parameters, want 10", o.values(), got)
	}
}

// TestOptionNamesGivenTwice: an option under two names is refused in a URL
// (with both names); on a command line, where each option has one name,
// the last value given wins.
func TestOptionNamesGivenTwice(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, v := range []url.Values{
		{"bots": {"1"}, "include-bots": {"0"}},
		{"min_runs": {"1"}, "min-runs": {"1"}},
		{"raw": {"1"}, "source": {"rollup"}},
		{"baseline_since": {"8d"}, "baseline-since": {"8d"}},
	} {
		_, err := RequestFromValues(v, now)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "are one option") {
			t.Errorf("%v: err = %v, want one option given twice", v, err)
		}
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string // set after parsing, as a command fills unset flags
		want int
	}{
		{nil, map[string]string{"min-runs": "10"}, 10},
		{[]string{"--min-runs", "5", "--min-runs", "6"}, nil, 6},
	} {
		fs := flag.NewFlagSet("report", flag.ContinueOnError)
		f := RegisterFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		for _, name := range slices.Sorted(maps.Keys(tc.env)) {
			fs.Set(name, tc.env[name])
		}
		if r, err := f.Request(now); err != nil || r.Options.MinRuns != tc.want {
			t.Errorf("%v then %v: min runs %d, %v; want %d", tc.args, tc.env, r.Options.MinRuns, err, tc.want)
		}
	}
}

// TestOptionErrors: a bad value is one line naming the option as given —
// as a URL parameter for the API, as a flag for a command line.
func TestOptionErrors(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, value, api, cli string
	}{
		{"since", "soon", `cannot parse time "soon" (want`, `--since "soon": cannot parse time "soon" (want`},
		{"until", "later", `cannot parse time "later"`, `--until "later": cannot parse time "later"`},
		{"min_runs", "many", `min_runs: "many" is not an integer`, `--min_runs "many": not an integer`},
		{"min-runs", "many", `min-runs: "many" is not an integer`, `--min-runs "many": not an integer`},
		{"bots", "maybe", `bots: "maybe" is not a boolean (1/0/true/false)`, `--bots "maybe": not a boolean (1/0/true/false)`},
		{"include-bots", "maybe", `include-bots: "maybe" is not a boolean`, `--include-bots "maybe": not a boolean`},
		{"raw", "maybe", `raw: "maybe" is not a boolean`, `--raw "maybe": not a boolean`},
		{"verdict-p", "p95", `verdict-p: "p95" is not a number`, `--verdict-p "p95": not a number`},
		{"effect_ms", "ten", `effect_ms: "ten" is not a number`, `--effect_ms "ten": not a number`},
		{"design", "5,0,2", `design "5,0,2": want parallel,bytes,warmup,major`, `--design "5,0,2": design "5,0,2": want`},
		{"replicates", "20000", "replicates 20000 is more than 10000", "replicates 20000 is more than 10000"},
		{"by", "planet", `unknown grouping "planet"`, `unknown grouping "planet"`},
	} {
		_, err := OptionsFromValues(url.Values{tc.name: {tc.value}}, now)
		if msg := strings.TrimPrefix(fmt.Sprint(err), ErrInvalidOptions.Error()+": "); !errors.Is(err, ErrInvalidOptions) || !strings.HasPrefix(msg, tc.api) || strings.Contains(msg, "\n") {
			t.Errorf("URL %s=%s: %v, want one line starting %q", tc.name, tc.value, err, tc.api)
		}
		if optionNamed[tc.name].name != tc.name {
			continue // an alias is a URL parameter only
		}
		fs := flag.NewFlagSet("report", flag.ContinueOnError)
		f := RegisterFlags(fs)
		if err := fs.Parse([]string{"--" + tc.name + "=" + tc.value}); err != nil {
			t.Fatal(err)
		}
		_, err = f.Request(now)
		if msg := strings.TrimPrefix(fmt.Sprint(err), ErrInvalidOptions.Error()+": "); !errors.Is(err, ErrInvalidOptions) || !strings.HasPrefix(msg, tc.cli) {
			t.Errorf("flag --%s=%s: %v, want one line starting %q", tc.name, tc.value, err, tc.cli)
		}
	}
	// A report's API refuses a comparison's options and the command line's
	// format; the dashboard's token is the handler's.
	for _, key := range []string{"baseline-since", "baseline_since", "baseline-until", "format"} {
		if _, err := OptionsFromValues(url.Values{key: {"8d"}}, now); err == nil || !strings.Contains(err.Error(), `unknown parameter "`+key+`"`) {
			t.Errorf("%s: err = %v, want an unknown parameter", key, err)
		}
	}
	if _, err := OptionsFromValues(url.Values{"token": {"x"}}, now); err != nil {
		t.Errorf("token: %v", err)
	}
}

// TestRequestBaseline: a comparison's baseline window under each of its
// names; none makes a report, with the default baseline beside it.
func TestRequestBaseline(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, v := range []url.Values{
		{"since": {"1d"}, "baseline-since": {"8d"}, "baseline-until": {"7d"}},
		{"since": {"1d"}, "baseline_since": {"8d"}, "baseline_until": {"7d"}},
		{"since": {"1d"}, "baseline_since": {"8d"}, "baseline-until": {"7d"}},
	} {
		r, err := RequestFromValues(v, now)
		if err != nil || !r.Compare || !r.BaselineSince.Equal(now.Add(-8*day)) || !r.BaselineUntil.Equal(now.Add(-7*day)) {
			t.Errorf("%v: %+v, %v", v, r, err)
		}
	}
	r, err := RequestFromValues(url.Values{"since": {"1d"}}, now)
	if err != nil || r.Compare || !r.BaselineUntil.Equal(now.Add(-day)) || !r.BaselineSince.Equal(now.Add(-2*day)) {
		t.Errorf("no baseline: %+v, %v", r, err)
	}
	for _, v := range []url.Values{{"baseline-until": {"soon"}}, {"since": {"1h"}, "baseline-since": {"1h"}, "baseline-until": {"2h"}}} {
		if _, err := RequestFromValues(v, now); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%v: err = %v, want ErrInvalidOptions", v, err)
		}
	}
}

// TestFlagsUsage: -h lists every option with its default, no URL alias,
// and switches without a value.
func TestFlagsUsage(t *testing.T) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	RegisterFlags(fs)
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	for _, want := range []string{
		"-by grouping\n", `(default continent)`, "-min-runs runs\n", "(default 30)", "-until time\n", "(default now)",
		"-include-bots\n", "-raw\n    \tthe same as --source raw", "-baseline-since time\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, b.String())
		}
	}
	for _, alias := range []string{"  -bots\n", "-min_runs", "-verdict_p"} {
		if strings.Contains(b.String(), alias) {
			t.Errorf("usage lists the URL alias %q:\n%s", alias, b.String())
		}
	}
	if strings.Contains(b.String(), "`") || strings.Contains(b.String(), "(default false)") {
		t.Errorf("usage:\n%s", b.String())
	}
}

func TestReportEmptyWindow(t *testing.T) {
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 2, Runs: 100}))
	for _, src := range []Source{SourceRaw, SourceRollup} {
		rep, err := Run(context.Background(), conn, Options{Since: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC), Source: src})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if len(rep.Groups) != 0 || len(rep.Timeline) != 0 {
			t.Errorf("%s: empty window has %d groups, %d hours", src, len(rep.Groups), len(rep.Timeline))
		}
		checkOutputs(t, rep)
		var b bytes.Buffer
		writeTable(&b, rep)
		if !strings.Contains(b.String(), "no samples in this window") {
			t.Errorf("table for an empty window:\n%s", b.String())
		}
	}
}

func TestReportSingleProtocolAndGroupings(t *testing.T) {
	conn := newDB(t)
	rows := synth.All(synth.Config{Seed: 3, Runs: 600, OnlyH2: true})
	load(t, conn, rows)
	ctx := context.Background()
	// Runs without an H3 batch are no like-for-like pair: the headline
	// leaves every one out, as partial, and shows the groups without figures.
	head, err := Run(ctx, conn, Options{Since: testSince, Until: testUntil})
	if err != nil {
		t.Fatal(err)
	}
	if len(head.Groups) == 0 {
		t.Fatal("no groups in the headline report")
	}
	for _, g := range head.Groups {
		if g.H2 != nil || g.H3 != nil || g.Excluded["partial"] != g.DesignRuns || g.DesignRuns == 0 {
			t.Errorf("headline group %s: h2 %v h3 %v, %d of %d runs excluded as partial", g.Group, g.H2 != nil, g.H3 != nil,
				g.Excluded["partial"], g.DesignRuns)
		}
	}
	checkOutputs(t, head)
	// Widened past the headline, the H2-only data is reported as such.
	rep, err := Run(ctx, conn, Options{Since: testSince, Until: testUntil, IncludeExcluded: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) == 0 {
		t.Fatal("no groups")
	}
	for _, g := range rep.Groups {
		if g.H2 == nil || g.H3 != nil || len(g.Diff) != 0 || g.Paired != nil || g.Availability != nil || !g.TooSmall {
			t.Errorf("H2-only group %s: h2 %v h3 %v diff %d paired %v availability %v too_small %v",
				g.Group, g.H2 != nil, g.H3 != nil, len(g.Diff), g.Paired, g.Availability, g.TooSmall)
		}
		// Intervals where the group's runs are enough (MinTailRuns), none
		// below: OC's few runs get none, EU's a p50 to p90.
		for _, p := range g.H2.Percentiles {
			if p.Insufficient != !sufficient(g.H2.Runs, p.P) || (p.CILowMS == nil) != p.Insufficient {
				t.Errorf("%s p%g with %d runs: insufficient %v, interval %v", g.Group, p.P, g.H2.Runs, p.Insufficient, p.CILowMS != nil)
			}
		}
		if g.Group == "EU" && g.H2.Percentiles[2].CILowMS == nil {
			t.Errorf("EU (%d runs) has no p90 interval", g.H2.Runs)
		}
	}
	checkOutputs(t, rep)

	// Every grouping and filter gives the exact per-group sample counts.
	for _, by := range Groupings() {
		for _, f := range []Options{{IncludeExcluded: true}, {IncludeWarmup: true, IncludeFailed: true, IncludeBots: true, IncludeExcluded: true}} {
			o := f
			o.Since, o.Until, o.By, o.Replicates = testSince, testUntil, by, -1
			rep, err := Run(ctx, conn, o)
			if err != nil {
				t.Fatalf("by %s: %v", by, err)
			}
			o.Validate()
			o.Since, o.Until = rep.Since, rep.Until // the rollup rounds to whole hours
			want := exact(rows, o)
			if len(rep.Groups) != len(want) {
				t.Errorf("by %s: %d groups, want %d", by, len(rep.Groups), len(want))
			}
			for _, g := range rep.Groups {
				if e := want[g.Group]; e == nil || e.samples != g.Samples || g.Runs != len(e.runs) {
					t.Errorf("by %s %+v: group %s has %d samples, %d runs", by, f, g.Group, g.Samples, g.Runs)
				}
				if rep.CI.Method != "none" || (g.H2 != nil && g.H2.Percentiles[0].CILowMS != nil) {
					t.Errorf("by %s: intervals computed with Replicates < 0", by)
				}
			}
			wantSource := "raw"
			if o.rollupAnswers() {
				wantSource = "rollup"
			}
			if rep.Source != wantSource {
				t.Errorf("by %s %+v: source %s, want %s", by, f, rep.Source, wantSource)
			}
		}
	}
	if _, err := Run(ctx, conn, Options{By: "asn", Source: SourceRollup}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("rollup by asn: err = %v, want ErrInvalidOptions", err)
	}
}

// A cap a third above what p99 needs thins a group and still shows every
// interval; a cap below p99's need is refused (TestRunsNeeded). 3500 runs
// are one insert, one part: the t-digest then reads the same both times.
func TestReportSampledBootstrap(t *testing.T) {
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 4, Runs: 3500, Regions: synth.DefaultRegions[:1]}))
	ctx := context.Background()
	full, err := Run(ctx, conn, Options{Since: testSince, Until: testUntil, MaxRunsPerGroup: 100000})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 2000
	capped, err := Run(ctx, conn, Options{Since: testSince, Until: testUntil, MaxRunsPerGroup: limit})
	if err != nil {
		t.Fatal(err)
	}
	f, c := full.Groups[0], capped.Groups[0]
	if f.Sampled || !c.Sampled || c.BootstrapRuns < limit*9/10 || c.BootstrapRuns > limit*11/10 {
		t.Fatalf("sampled %v/%v, bootstrap runs %d/%d; want about %d when capped", f.Sampled, c.Sampled, f.BootstrapRuns, c.BootstrapRuns, limit)
	}
	if f.H2.Exact || c.H2.Exact || f.H2.Samples < ExactBelowSamples {
		t.Fatalf("%d H2 samples, exact %v/%v: want t-digest estimates in both reports", f.H2.Samples, f.H2.Exact, c.H2.Exact)
	}
	// Point estimates come from ClickHouse either way; the scaled interval
	// of the sample estimates the full-data width.
	for i, d := range c.Diff {
		fd := f.Diff[i]
		if d.Insufficient || fd.Insufficient {
			t.Fatalf("p%g: insufficient (capped %v, full %v) with %d and %d runs fetched", d.P, d.Insufficient, fd.Insufficient, c.BootstrapRuns, f.BootstrapRuns)
		}
		if d.MS != fd.MS {
			t.Errorf("p%g: capped estimate %.3f differs from full %.3f", d.P, d.MS, fd.MS)
		}
		wf, wc := *fd.CIHighMS-*fd.CILowMS, *d.CIHighMS-*d.CILowMS
		if wc < wf/2 || wc > wf*2 || *d.CILowMS > d.MS || *d.CIHighMS < d.MS {
			t.Errorf("p%g: capped CI [%.2f, %.2f] vs full [%.2f, %.2f]", d.P, *d.CILowMS, *d.CIHighMS, *fd.CILowMS, *fd.CIHighMS)
		}
	}
}

// TestAutoSourceCoversTheWholeWindow: the default (rollup) report covers
// the window asked for, up to its last second — whole hours from the
// rollup, the partial hours at the edges from raw rows — and counts
// exactly what raw rows give for the same window.
func TestAutoSourceCoversTheWholeWindow(t *testing.T) {
	conn := newDB(t)
	rows := synth.All(synth.Config{Seed: 6, Runs: 200})
	load(t, conn, rows)
	// Every grouping the rollup answers.
	for _, by := range []string{"continent", "country", "none"} {
		rep, err := Run(context.Background(), conn, Options{Since: testSince, Until: testUntil, By: by})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Source != "rollup" || !rep.Since.Equal(testSince) || !rep.Until.Equal(testUntil) {
			t.Errorf("auto report by %s: source %s window %s – %s, want rollup %s – %s", by, rep.Source, rep.Since, rep.Until, testSince, testUntil)
		}
		raw, err := Run(context.Background(), conn, Options{Since: testSince, Until: testUntil, Source: SourceRaw, By: by})
		if err != nil {
			t.Fatal(err)
		}
		// The designs: from run_counts for the whole hours and the runs
		// table for the edges, as the runs table gives them.
		if len(rep.Designs) == 0 || !reflect.DeepEqual(rep.Designs, raw.Designs) {
			t.Errorf("by %s: designs from the rollup %+v, from raw rows %+v", by, rep.Designs, raw.Designs)
		}
		o := Options{Since: testSince, Until: testUntil, By: by}
		o.Validate()
		want := exact(rows, o)
		if len(raw.Groups) != len(rep.Groups) || len(rep.Groups) != len(want) {
			t.Fatalf("by %s: %d rollup groups, %d raw, %d exact", by, len(rep.Groups), len(raw.Groups), len(want))
		}
		for i := range raw.Groups {
			g := rep.Groups[i]
			if raw.Groups[i].Samples != g.Samples || want[g.Group] == nil || want[g.Group].samples != g.Samples {
				t.Errorf("by %s, %s: rollup %d samples, raw %d on the same window", by, g.Group, g.Samples, raw.Groups[i].Samples)
			}
			for k := range percentiles {
				if a, b := g.H3.Percentiles[k].MS, raw.Groups[i].H3.Percentiles[k].MS; a != b {
					t.Errorf("by %s, %s: H3 p%g %v from the rollup, %v from raw rows", by, g.Group, percentiles[k], a, b)
				}
			}
			// The intention-to-treat view: the same runs, requests and
			// failures from the rollup as from raw rows.
			ri, wi := g.ITT, raw.Groups[i].ITT
			if ri == nil || wi == nil || ri.H2 == nil || ri.H3 == nil || wi.H2 == nil || wi.H3 == nil {
				t.Fatalf("by %s, %s: intention to treat %+v (rollup), %+v (raw)", by, g.Group, ri, wi)
			}
			for _, c := range [][2]*ITTStats{{ri.H2, wi.H2}, {ri.H3, wi.H3}} {
				if c[0].Samples != c[1].Samples || c[0].Failed != c[1].Failed || c[0].Runs != c[1].Runs ||
					c[0].FailedRuns != c[1].FailedRuns || c[0].RunFailureRate != c[1].RunFailureRate {
					t.Errorf("by %s, %s: intention to treat from the rollup %+v, from raw rows %+v", by, g.Group, *c[0], *c[1])
				}
				// Percentiles from itt_rollup's states, within the
				// t-digest's bound of raw rows' (as TestRunsTableAnswersAsTheSamples allows).
				for j := range c[0].Percentiles {
					if p, q := c[0].Percentiles[j].MS, c[1].Percentiles[j].MS; p == 0 || math.Abs(p-q) > 0.5+0.03*math.Abs(q) {
						t.Errorf("by %s, %s: intention to treat p%g %.3f ms from the rollup, %.3f from raw rows", by, g.Group, c[0].Percentiles[j].P, p, q)
					}
				}
			}
			// The excluded runs: from run_counts for the whole hours and
			// the runs table for the edges, as the runs table gives them.
			w := raw.Groups[i]
			if g.DesignRuns != w.DesignRuns || !mapsEqual(g.Excluded, w.Excluded) || !mapsEqual(g.ColdRuns, w.ColdRuns) ||
				(g.Availability == nil) != (w.Availability == nil) || g.Availability != nil && *g.Availability != *w.Availability && g.Availability.GotH3 != w.Availability.GotH3 {
				t.Errorf("by %s, %s: excluded runs from the rollup %d %v %v %+v, from raw rows %d %v %v %+v", by, g.Group,
					g.DesignRuns, g.Excluded, g.ColdRuns, g.Availability, w.DesignRuns, w.Excluded, w.ColdRuns, w.Availability)
			}
		}
		// First contact and the script errors: from run_fact_counts for
		// the whole hours and run_facts for the edges, as run_facts gives them.
		for _, c := range []struct {
			what     string
			roll, rw any
		}{{"first contact", rep.FirstContact, raw.FirstContact}, {"script errors", rep.ScriptErrors, raw.ScriptErrors}} {
			a, _ := json.Marshal(c.roll)
			b, _ := json.Marshal(c.rw)
			if string(a) != string(b) {
				t.Errorf("by %s: %s from the rollup %s, from raw rows %s", by, c.what, a, b)
			}
		}
		if rep.FirstContact == nil || len(rep.FirstContact.Groups) == 0 {
			t.Errorf("by %s: no first contact counted", by)
		}
	}
}

// keptDurationsSQL and keptSQL leave a run's failed requests in its arrays, without reading
// their error codes, when excluded runs are left out: every exclusion mask
// must then count ExcludeFailed, the mark of a run with one.
func TestExclusionMasksCountFailed(t *testing.T) {
	for _, o := range []Options{{}, {IncludeBots: true}, {IncludeFailed: true}} {
		if o.exclusionMask()&store.ExcludeFailed == 0 {
			t.Errorf("%+v: the exclusion mask %08b leaves runs with a failed request in", o, o.exclusionMask())
		}
		if o.IncludeExcluded || o.keptDurationsSQL() != "durations" || o.keptSQL() != "outcomes" {
			t.Errorf("%+v: kept %s and %s", o, o.keptDurationsSQL(), o.keptSQL())
		}
	}
	if o := (Options{IncludeExcluded: true}); !strings.Contains(o.keptDurationsSQL(), "errors") || !strings.Contains(o.keptSQL(), "errors") {
		t.Errorf("with excluded runs in, kept %s and %s read no error codes", o.keptDurationsSQL(), o.keptSQL())
	}
}

// An experiment starts at a fixed time: a start relative to now, or none,
// is refused with what to give instead.
func TestExperimentNeedsAFixedStart(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	o, err := OptionsFromValues(url.Values{"experiment": {"1"}, "since": {"2025-03-01"}}, now)
	if err != nil || !o.Experiment || !o.verdictRule().Experiment || o.values().Get("experiment") != "1" {
		t.Fatalf("experiment from 2025-03-01: %+v, %v", o, err)
	}
	for _, v := range []url.Values{
		{"experiment": {"1"}}, {"experiment": {"1"}, "since": {"7d"}}, {"experiment": {"true"}, "since": {"now"}},
	} {
		if _, err := OptionsFromValues(v, now); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "give since as a time") {
			t.Errorf("%v: %v, want a refusal naming the fix", v, err)
		}
	}
	if o, err := OptionsFromValues(url.Values{"since": {"7d"}}, now); err != nil || o.Experiment || o.verdictRule().Experiment {
		t.Errorf("a relative window is no experiment: %+v, %v", o, err)
	}
}
