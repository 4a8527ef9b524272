package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/synth"
)

// TestEnginesAgree: the same rows in ClickHouse 18.16 and 26.x give the
// same reports, raw and from the rollup, by none and by country. Every field
// is equal on both but the estimates, each held to its own bound; run
// counts, raw and from the rollup (whose HyperLogLog states the engines
// hash differently, so the report counts from the runs table), are the
// exact counts on each engine:
//   - t-digest percentiles of the headline's outcomes (those not exact):
//     on each engine between the exact order statistics at ranks q ± δ
//     (REPORT.md, "Accuracy"); their intervals, bootstrapped on the same
//     runs, as wide on both; and what is computed from them (differences,
//     verdicts) free to follow;
//   - the other t-digest sections (intention to treat, curves, the trend):
//     the same shape on both, their values not compared here — near the
//     10 s at which the intention-to-treat view counts a failure, the two
//     engines' p99 were 7 184 and 10 000 ms over the same rows, both
//     within the rank bound.
func TestEnginesAgree(t *testing.T) {
	rows := synth.All(synth.Config{Seed: 13, Runs: 3000})
	engines := []storetest.Engine{storetest.Managed, storetest.Chdb}
	conns := make([]driver.Conn, len(engines))
	for i, e := range engines {
		conns[i] = storetest.DBOn(t, e)
		load(t, conns[i], rows)
	}
	ctx := context.Background()
	for _, src := range []model.Source{model.SourceRaw, model.SourceRollup} {
		for _, by := range []string{"none", "country"} {
			o := model.Options{Since: testSince, Until: testUntil, Source: src, By: by, MaxRunsPerGroup: 100000}
			label := fmt.Sprintf("%s by %s", src, by)
			var (
				reps [2]*model.Report
				js   [2]any
			)
			for i, conn := range conns {
				rep, err := Run(ctx, conn, o)
				if err != nil {
					t.Fatalf("%s on %s: %v", label, engines[i], err)
				}
				b, err := json.Marshal(rep)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, &js[i]); err != nil {
					t.Fatal(err)
				}
				reps[i] = rep
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			want := exact(rows, o)
			estimated := map[int]bool{} // groups with a t-digest H2 or H3
			for i, rep := range reps {
				for gi := range rep.Groups {
					g := &rep.Groups[gi]
					e := want[g.Group]
					if e == nil {
						t.Fatalf("%s on %s: unexpected group %q", label, engines[i], g.Group)
					}
					if g.Runs != len(e.runs) {
						t.Errorf("%s on %s, %s: %d runs, want %d", label, engines[i], g.Group, g.Runs, len(e.runs))
					}
					for _, oc := range []string{model.OutcomeH2, model.OutcomeH3, model.OutcomeWantedH3GotH2, model.OutcomeOther} {
						st := statsOf(g, oc)
						if st == nil || e.ord[oc] == nil {
							continue
						}
						if st.Runs != len(e.outRuns[oc]) {
							t.Errorf("%s on %s, %s %s: %d runs, want %d", label, engines[i], g.Group, oc, st.Runs, len(e.outRuns[oc]))
						}
						if !st.Exact {
							checkPercentiles(t, fmt.Sprintf("%s on %s, %s %s", label, engines[i], g.Group, oc), st, e.ord[oc])
							if oc == model.OutcomeH2 || oc == model.OutcomeH3 {
								estimated[gi] = true
							}
						}
					}
				}
			}
			if sw := reps[0].SiteWide; sw != nil && (!sw.H2.Exact || !sw.H3.Exact) {
				estimated[siteKey] = true // one group's t-digest figures, as that group's
			}
			if len(reps[0].Groups) != len(reps[1].Groups) {
				t.Fatalf("%s: %d groups on %s, %d on %s", label, len(reps[0].Groups), engines[0], len(reps[1].Groups), engines[1])
			}
			for gi := range reps[0].Groups {
				for _, oc := range []string{model.OutcomeH2, model.OutcomeH3} {
					a, b := statsOf(&reps[0].Groups[gi], oc), statsOf(&reps[1].Groups[gi], oc)
					if a == nil || b == nil || a.Exact || len(a.Percentiles) != len(b.Percentiles) {
						continue
					}
					for k, p := range a.Percentiles {
						q := b.Percentiles[k]
						if (p.CILowMS == nil) != (q.CILowMS == nil) {
							continue // the generic comparison reports it
						}
						if p.CILowMS != nil && (math.Abs((p.MS-*p.CILowMS)-(q.MS-*q.CILowMS)) > 2e-3 || math.Abs((*p.CIHighMS-p.MS)-(*q.CIHighMS-q.MS)) > 2e-3) {
							t.Errorf("%s, %s %s p%g: interval %.3f [%.3f, %.3f] on %s, %.3f [%.3f, %.3f] on %s: not as wide",
								label, reps[0].Groups[gi].Group, oc, p.P, p.MS, *p.CILowMS, *p.CIHighMS, engines[0], q.MS, *q.CILowMS, *q.CIHighMS, engines[1])
						}
					}
				}
			}
			for _, d := range jsonDiff("", js[0], js[1]) {
				if !estimate(d.path, estimated) {
					t.Errorf("%s: %s", label, d)
				}
			}
		}
	}
}

// estimate reports whether the JSON leaf at path is an estimate that the
// engines may disagree on (TestEnginesAgree checks those on their own).
func estimate(path string, estimated map[int]bool) bool {
	if m := groupPath.FindStringSubmatch(path); m != nil {
		gi, _ := strconv.Atoi(m[1])
		rest := m[2]
		switch {
		case strings.HasPrefix(rest, ".intention_to_treat."), strings.HasPrefix(rest, ".curves."):
			return true
		case strings.HasPrefix(rest, ".handshakes[") && (strings.Contains(rest, "].percentiles[") || strings.Contains(rest, "].connect_percentiles[")):
			return true // t-digest quantiles at any size; the counts, shares and fastest must agree
		case estimated[gi] && (percentilePath.MatchString(rest) || strings.HasPrefix(rest, ".diff[")):
			return true
		}
		return false
	}
	if strings.HasPrefix(path, ".trend.") {
		return true
	}
	if rest, ok := strings.CutPrefix(path, ".site_wide"); ok {
		if !estimated[siteKey] {
			return false
		}
		m := verdictPath.FindStringSubmatch(rest)
		return percentilePath.MatchString(rest) || strings.HasPrefix(rest, ".diff[") || rest == ".headline" ||
			m != nil && slices.Contains([]string{"diff_ms", "diff_pct", "ci_low_ms", "ci_high_ms", "text"}, m[1])
	}
	if m := verdictPath.FindStringSubmatch(path); m != nil {
		// A verdict reads its group's difference and interval.
		switch m[1] {
		case "diff_ms", "diff_pct", "ci_low_ms", "ci_high_ms":
			return len(estimated) > 0
		case "text":
			return len(estimated) > 0
		}
	}
	return false
}

var (
	groupPath      = regexp.MustCompile(`^\.groups\[(\d+)\](.*)$`)
	percentilePath = regexp.MustCompile(`^\.(h2|h3)\.percentiles\[\d+\]\.(ms|ci_low_ms|ci_high_ms)$`)
	verdictPath    = regexp.MustCompile(`^\.verdicts\[\d+\]\.(\w+)$`)
)

// siteKey is the site-wide line's key in estimated.
const siteKey = -1

// leafDiff is one leaf where two decoded JSON documents differ.
type leafDiff struct {
	path string
	a, b any
}

func (d leafDiff) String() string { return fmt.Sprintf("%s: %v vs %v", d.path, d.a, d.b) }

// jsonDiff lists the leaves where a and b, decoded JSON, differ.
func jsonDiff(path string, a, b any) []leafDiff {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok {
			return []leafDiff{{path, a, b}}
		}
		var out []leafDiff
		keys := map[string]bool{}
		for k := range a {
			keys[k] = true
		}
		for k := range b {
			keys[k] = true
		}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range keys {
				if !yield(k) {
					return
				}
			}
		}) {
			out = append(out, jsonDiff(path+"."+k, a[k], b[k])...)
		}
		return out
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return []leafDiff{{path, fmt.Sprintf("%d items", len(a)), lenOf(b)}}
		}
		var out []leafDiff
		for i := range a {
			out = append(out, jsonDiff(fmt.Sprintf("%s[%d]", path, i), a[i], b[i])...)
		}
		return out
	case float64:
		if b, ok := b.(float64); ok && math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) {
			return nil
		}
	default:
		if fmt.Sprint(a) == fmt.Sprint(b) {
			return nil
		}
	}
	return []leafDiff{{path, a, b}}
}

func lenOf(v any) string {
	if s, ok := v.([]any); ok {
		return fmt.Sprintf("%d items", len(s))
	}
	return strings.TrimSpace(fmt.Sprint(v))
}
