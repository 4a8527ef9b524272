package model

import (
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
		err := CheckFinite(tc.v)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want+",")) {
			t.Errorf("checkFinite(%+v) = %v, want %q", tc.v, err, tc.want)
		}
	}
}
