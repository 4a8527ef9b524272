package beacon

import (
	"errors"
	"testing"
)

// The script's own errors (x) are optional: reports without them, as every
// script before 1.3.0 sends, decode as before with zero counts; with them, a
// run they cut short is accepted with the samples it has, none included.
func TestDecodeScriptErrors(t *testing.T) {
	old, err := Decode(marshal(t, validReport()))
	if err != nil || old.ScriptErrors != (ScriptErrors{}) {
		t.Fatalf("report without x: %+v, %v", old.ScriptErrors, err)
	}
	with := func(x any, samples int, partial bool) []byte {
		r := validReport()
		if x != nil {
			r["x"] = x
		}
		r["s"] = r["s"].([]any)[:samples]
		r["p"] = partial
		return marshal(t, r)
	}
	all := len(validReport()["s"].([]any))
	for _, tt := range []struct {
		name string
		body []byte
		want ScriptErrors
	}{
		{"every kind", with(map[string]any{"idle": 1, "warmup": 2, "batch": 3, "timing": 4, "send": 5}, all, false),
			ScriptErrors{Idle: 1, Warmup: 2, Batch: 3, Timing: 4, Send: 5}},
		{"complete run cut short", with(map[string]any{"batch": 1}, 4, false), ScriptErrors{Batch: 1}},
		{"no sample at all", with(map[string]any{"warmup": 1}, 0, false), ScriptErrors{Warmup: 1}},
		{"partial, cut short", with(map[string]any{"timing": 2}, 1, true), ScriptErrors{Timing: 2}},
		{"largest count", with(map[string]any{"send": MaxScriptErrors}, all, false), ScriptErrors{Send: MaxScriptErrors}},
		{"empty object", with(map[string]any{}, all, false), ScriptErrors{}},
	} {
		r, err := Decode(tt.body)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if r.ScriptErrors != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, r.ScriptErrors, tt.want)
		}
		if _, ok := fastDecode(tt.body, arenas.Get().(*arena)); !ok {
			t.Errorf("%s: fell back to the general path", tt.name)
		}
		b, err := Encode(r)
		if err != nil {
			t.Errorf("%s: encoding: %v", tt.name, err)
			continue
		}
		if back, err := Decode(b); err != nil || back.ScriptErrors != r.ScriptErrors {
			t.Errorf("%s: round trip %s: %+v, %v", tt.name, b, back, err)
		}
	}
	for _, tt := range []struct {
		name   string
		body   []byte
		reason string
	}{
		{"no samples, no errors", with(nil, 0, true), ReasonValue},
		{"complete run short, no errors", with(nil, 4, false), ReasonValue},
		{"empty x does not excuse missing samples", with(map[string]any{}, 4, false), ReasonValue},
		{"zero count", with(map[string]any{"batch": 0}, all, false), ReasonValue},
		{"negative count", with(map[string]any{"batch": -1}, all, false), ReasonValue},
		{"count over the limit", with(map[string]any{"batch": MaxScriptErrors + 1}, all, false), ReasonLimit},
		{"unknown kind", with(map[string]any{"boot": 1}, all, false), ReasonField},
		{"count as a string", with(map[string]any{"send": "1"}, all, false), ReasonField},
		{"x as an array", with([]any{1}, all, false), ReasonField},
		{"mis-cased kind", with(map[string]any{"Send": 1}, all, false), ReasonField},
	} {
		_, err := Decode(tt.body)
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != tt.reason {
			t.Errorf("%s: %v, want reason %s", tt.name, err, tt.reason)
		}
	}
}
