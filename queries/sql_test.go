package queries

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSourceQueryBindsEveryParameter checks that each variant of the
// points and timeline SQL, the rollup's with its raw-edge block cut
// included, has as many placeholders as sourceQuery binds, and no marker
// left.
func TestSourceQueryBindsEveryParameter(t *testing.T) {
	comment := regexp.MustCompile(`(?m)--.*$`)
	at := func(h, m int) time.Time { return time.Date(2025, 1, 1, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name         string
		since, until time.Time
		rollupArgs   int
	}{
		{"whole hours", at(1, 0), at(5, 0), 4},
		{"partial edges", at(0, 30), at(5, 15), 10},
		{"no whole hour", at(1, 10), at(1, 50), 10},
	} {
		w := newWindow(tc.since, tc.until)
		for _, kind := range []string{"points", "timeline", "itt"} {
			for _, rollup := range []bool{false, true} {
				if kind == "itt" && !rollup {
					continue // itt_raw.sql binds the window and site only (itt.go)
				}
				name, q, args, err := sourceQuery(kind, &Options{By: "continent"}, w, rollup)
				if err != nil {
					t.Fatalf("%s %s: %v", tc.name, kind, err)
				}
				if n := strings.Count(comment.ReplaceAllString(q, ""), "?"); n != len(args) {
					t.Errorf("%s: %s has %d placeholders, %d parameters", tc.name, name, n, len(args))
				}
				if rollup && len(args) != tc.rollupArgs {
					t.Errorf("%s: %s binds %d parameters, want %d", tc.name, name, len(args), tc.rollupArgs)
				}
				if strings.Contains(q, "/*") {
					t.Errorf("%s: %s keeps a marker:\n%s", tc.name, name, q)
				}
			}
		}
	}
}
