package model

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

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
