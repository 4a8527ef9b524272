package beacon

import (
	"net/url"
	"strings"
	"testing"
)

func TestScriptTag(t *testing.T) {
	good := url.Values{"h3": {"https://h3.example.com"}, "h2": {"https://h2.example.com"}, "parallel": {"5"}, "site": {""}}
	for _, tc := range []struct {
		name, collector string
		params          url.Values
		pin             bool
		want, wantErr   string
	}{
		{"unpinned", "https://rum.example.com", good, false, `<script async src="https://rum.example.com/h3rum.js?endpoint=https%3A%2F%2Frum.example.com&amp;h2=`, ""},
		{"pinned", "https://rum.example.com/", good, true, `integrity="sha384-`, ""},
		{"a path is no origin", "https://rum.example.com/h3rum.js", good, false, "", `want the collector's origin`},
		{"no collector", "", good, false, "", `collector "": want the collector's origin`},
		{"no h2", "https://rum.example.com", url.Values{"h3": {"https://h3.example.com"}}, false, "", "h3 and h2 are required"},
		{"a limit", "https://rum.example.com", url.Values{"h3": {"https://h3.example.com"}, "h2": {"https://h2.example.com"}, "parallel": {"21"}}, false, "",
			`parameter parallel="21": want an integer from 1 to 20`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tag, err := ScriptTag(tc.collector, tc.params, tc.pin)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(tag, tc.want) {
				t.Fatalf("%q, %v; want it to hold %q", tag, err, tc.want)
			}
			if tc.pin && !strings.Contains(tag, "/"+ScriptName()+"?") {
				t.Errorf("a pinned tag names %s: %s", ScriptName(), tag)
			}
		})
	}
	// The flags' help states the protocol's limits, not retyped numbers.
	for _, p := range ScriptParams() {
		if p.Name == "parallel" && !strings.Contains(p.Usage(), "1 to 20 (default 5)") {
			t.Errorf("parallel's usage: %q", p.Usage())
		}
	}
}
