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
		w := newWindow(tc.since, tc.until, tc.until.Add(time.Hour))
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

// A window that runs to the present takes its current hour from the
// rollup, which holds no row after now; one that ended in the past reads
// its last partial hour from raw rows.
func TestNewWindowCurrentHour(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2025, 1, 1, h, m, 0, 0, time.UTC) }
	u := func(t time.Time) uint32 { return uint32(t.Unix()) }
	for _, tc := range []struct {
		name              string
		since, until, now time.Time
		want              window
	}{
		{"to the present", at(0, 30), at(5, 15), at(5, 14),
			window{u(at(0, 30)), u(at(5, 15)), u(at(1, 0)), u(at(6, 0)), u(at(0, 30)), u(at(1, 0)), u(at(5, 15)), u(at(5, 15))}},
		{"into the future", at(0, 30), at(5, 15), at(3, 0),
			window{u(at(0, 30)), u(at(5, 15)), u(at(1, 0)), u(at(6, 0)), u(at(0, 30)), u(at(1, 0)), u(at(5, 15)), u(at(5, 15))}},
		{"ended before now", at(0, 30), at(5, 15), at(5, 16),
			window{u(at(0, 30)), u(at(5, 15)), u(at(1, 0)), u(at(5, 0)), u(at(0, 30)), u(at(1, 0)), u(at(5, 0)), u(at(5, 15))}},
		{"whole hours to the present", at(1, 0), at(5, 0), at(5, 0),
			window{u(at(1, 0)), u(at(5, 0)), u(at(1, 0)), u(at(5, 0)), u(at(1, 0)), u(at(1, 0)), u(at(5, 0)), u(at(5, 0))}},
		{"within the current hour", at(5, 10), at(5, 50), at(5, 40),
			window{u(at(5, 10)), u(at(5, 50)), u(at(5, 10)), u(at(5, 10)), u(at(5, 10)), u(at(5, 50)), u(at(5, 50)), u(at(5, 50))}},
	} {
		if got := newWindow(tc.since, tc.until, tc.now); got != tc.want {
			t.Errorf("%s: window %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
