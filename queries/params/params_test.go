package params

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/queries/model"
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
			if err == nil || !errors.Is(err, model.ErrInvalidOptions) {
				t.Errorf("ParseTime(%q) = %v, %v; want an ErrInvalidOptions error", tc.in, got, err)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
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
		check func(o model.Options) bool
	}{
		{[]string{"min-runs", "min_runs"}, "10", func(o model.Options) bool { return o.MinRuns == 10 }},
		{[]string{"include-warmup", "warmup"}, "1", func(o model.Options) bool { return o.IncludeWarmup }},
		{[]string{"include-failed", "failed"}, "1", func(o model.Options) bool { return o.IncludeFailed }},
		{[]string{"include-bots", "bots"}, "1", func(o model.Options) bool { return o.IncludeBots }},
		{[]string{"include-excluded", "excluded"}, "1", func(o model.Options) bool { return o.IncludeExcluded }},
		{[]string{"source", "raw"}, "", func(o model.Options) bool { return o.Source == model.SourceRaw }},
		{[]string{"verdict-p", "verdict_p"}, "50", func(o model.Options) bool { return o.VerdictP == 50 }},
		{[]string{"effect-ms", "effect_ms"}, "2.5", func(o model.Options) bool { return o.EffectMS == 2.5 }},
		{[]string{"since"}, "7d", func(o model.Options) bool { return o.Since.Equal(now.Add(-7 * 24 * time.Hour)) }},
		{[]string{"until"}, "2025-03-09", func(o model.Options) bool { return o.Until.Equal(time.Date(2025, 3, 9, 0, 0, 0, 0, time.UTC)) }},
		{[]string{"site"}, "a.example", func(o model.Options) bool { return o.Site == "a.example" }},
		{[]string{"continent"}, "eu", func(o model.Options) bool { return o.Continent == "EU" }},
		{[]string{"country"}, "jp", func(o model.Options) bool { return o.Country == "JP" }},
		{[]string{"by"}, "asn", func(o model.Options) bool { return o.By == "asn" }},
		{[]string{"design"}, "5,0,2,1", func(o model.Options) bool {
			return o.Design == model.Design{Parallel: 5, Warmup: 2, BeaconMajor: 1, Set: true}
		}},
		{[]string{"design"}, "5,0,2,1,gap=100,x2=-3", func(o model.Options) bool {
			return o.Design == model.Design{Parallel: 5, Warmup: 2, BeaconMajor: 1, Extra: "gap=100,x2=-3", Set: true} && o.Design.String() == "5,0,2,1,gap=100,x2=-3"
		}},
		{[]string{"agent"}, "1", func(o model.Options) bool { return o.Agent && o.Source == model.SourceRaw }},
		{[]string{"replicates"}, "200", func(o model.Options) bool { return o.Replicates == 200 }},
		{[]string{"headline"}, "1", func(o model.Options) bool { return o.Headline }},
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
			if name == tc.names[0] && optionNamed[name].get != nil && !Values(&o).Has(name) {
				t.Errorf("links of %s=%s: %v, want %s", name, value, Values(&o), name)
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
	for name := range Values(&o) {
		if optionNamed[name] == nil || optionNamed[name].name != name {
			t.Errorf("links carry %s, not a canonical name: %v", name, Values(&o))
		}
	}
	if got := len(Values(&o)); got != 10 {
		t.Errorf("links %v: %d parameters, want 10", Values(&o), got)
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
		if !errors.Is(err, model.ErrInvalidOptions) || !strings.Contains(err.Error(), "are one option") {
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
		if msg := strings.TrimPrefix(fmt.Sprint(err), model.ErrInvalidOptions.Error()+": "); !errors.Is(err, model.ErrInvalidOptions) || !strings.HasPrefix(msg, tc.api) || strings.Contains(msg, "\n") {
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
		if msg := strings.TrimPrefix(fmt.Sprint(err), model.ErrInvalidOptions.Error()+": "); !errors.Is(err, model.ErrInvalidOptions) || !strings.HasPrefix(msg, tc.cli) {
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
		if _, err := RequestFromValues(v, now); !errors.Is(err, model.ErrInvalidOptions) {
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

// An experiment starts at a fixed time: a start relative to now, or none,
// is refused with what to give instead.
func TestExperimentNeedsAFixedStart(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	o, err := OptionsFromValues(url.Values{"experiment": {"1"}, "since": {"2025-03-01"}}, now)
	if err != nil || !o.Experiment || Values(&o).Get("experiment") != "1" {
		t.Fatalf("experiment from 2025-03-01: %+v, %v", o, err)
	}
	for _, v := range []url.Values{
		{"experiment": {"1"}}, {"experiment": {"1"}, "since": {"7d"}}, {"experiment": {"true"}, "since": {"now"}},
	} {
		if _, err := OptionsFromValues(v, now); !errors.Is(err, model.ErrInvalidOptions) || !strings.Contains(err.Error(), "give since as a time") {
			t.Errorf("%v: %v, want a refusal naming the fix", v, err)
		}
	}
	if o, err := OptionsFromValues(url.Values{"since": {"7d"}}, now); err != nil || o.Experiment {
		t.Errorf("a relative window is no experiment: %+v, %v", o, err)
	}
}
