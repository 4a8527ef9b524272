package queries

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestCheckFinite(t *testing.T) {
	type inner struct {
		V  float32 `json:"v"`
		No float64 `json:"-"`
	}
	type Embedded struct {
		E float64 `json:"e"`
	}
	type outer struct {
		Embedded
		Plain  float64
		List   []inner           `json:"list"`
		ByName map[string]*inner `json:"by_name"`
		Any    any               `json:"any"`
		hidden float64
	}
	inf, nan := math.Inf(-1), math.NaN()
	for _, tc := range []struct {
		v    any
		want string // "" for finite
	}{
		{outer{hidden: nan, List: []inner{{No: inf}}}, ""},
		{outer{Embedded: Embedded{E: nan}}, "e is NaN"},
		{outer{Plain: inf}, "Plain is -Inf"},
		{&outer{List: []inner{{}, {V: float32(math.Inf(1))}}}, "list[1].v is +Inf"},
		{outer{ByName: map[string]*inner{"a": {}, "b": {V: float32(nan)}, "c": nil}}, `by_name["b"].v is NaN`},
		{outer{Any: []float64{1, inf}}, "any[1] is -Inf"},
		{map[int]float64{2: 1, 1: nan}, "[\"1\"] is NaN"},
	} {
		err := checkFinite(tc.v)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want+",")) {
			t.Errorf("checkFinite(%+v) = %v, want %q", tc.v, err, tc.want)
		}
	}
}

// TestReportNotFinite: a report holding a number JSON cannot carry is
// refused where it leaves, with a reason naming it: the HTML report is
// not written (/api/report's answer: TestReportNotFinite in queries/api).
func TestReportNotFinite(t *testing.T) {
	bad := func() *Report {
		share := math.NaN()
		return &Report{By: "continent", Percentiles: percentiles[:], Groups: []Group{}, Timeline: []Hour{}, Verdicts: []Verdict{}, done: true,
			NEL: &NEL{By: "continent", Failures: []NELFailure{},
				Protocols: []NELProtocol{{Proto: "h2"}, {Proto: "h3", FailedEstimated: math.Inf(1), FailureShare: &share}}}}
	}
	const reason = "nel.protocols[1].failed_estimated_requests is +Inf"
	if err := writeHTML(&bytes.Buffer{}, bad()); err == nil || !strings.Contains(err.Error(), reason) {
		t.Errorf("render.HTML of a report with +Inf: %v, want an error naming %s", err, reason)
	}
	// Where it is built: Run, Estimate and AddRuns end with this check.
	if err := bad().checkFinite(); err == nil || !strings.Contains(err.Error(), "computing the report: "+reason) {
		t.Errorf("checkFinite of a report with +Inf: %v", err)
	}
}
