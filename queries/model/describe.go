package model

import (
	"fmt"
	"strings"

	"github.com/h3rum/h3rum/ingest/store"
)

// The report's account of itself in words, which every output prints
// beside the figures: what was selected, which design, how percentiles
// and intervals were made, how the verdicts were reached.

// Selection describes the report's sample selection in words.
func (r *Report) Selection() string {
	parts := []string{"parallel batches", "successful requests", "non-bot runs", "like-for-like runs only"}
	if r.Filters.IncludeWarmup {
		parts[0] = "warm-up and parallel requests"
	}
	if r.Filters.IncludeFailed {
		parts[1] = "successful and failed requests"
	}
	if r.Filters.IncludeBots {
		parts[2] = "all runs including bots"
	}
	if r.Filters.IncludeExcluded {
		parts[3] = "runs with exclusions too"
	}
	return strings.Join(parts, ", ")
}

// DesignText names the report's test design and how many others the
// window holds.
func (r *Report) DesignText() string {
	d := r.Design
	if d.All {
		return "all designs pooled"
	}
	s := fmt.Sprintf("design: %d parallel, %d bytes, %d warm-ups, script v%d", d.Parallel, d.Bytes, d.Warmup, d.BeaconMajor)
	if d.Extra != "" {
		s += ", " + strings.ReplaceAll(d.Extra, ",", ", ")
	}
	if n := len(r.Designs) - 1; n > 0 {
		s += fmt.Sprintf(" (%d other design(s) in the window: --design)", n)
	}
	return s
}

// ExcludedText lists a group's runs left out of the headline by reason.
func (g Group) ExcludedText() string {
	if len(g.Excluded) == 0 {
		return ""
	}
	var parts []string
	for _, name := range store.ExclusionNames {
		if n := g.Excluded[name]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", name, n))
		}
	}
	return fmt.Sprintf("%s: %d runs of the design; left out: %s", g.Group, g.DesignRuns, strings.Join(parts, ", "))
}

// CIText describes the interval method in words.
func (r *Report) CIText() string {
	if r.CI.Method != "cluster_bootstrap_runs" {
		return "no confidence intervals"
	}
	return fmt.Sprintf("95 %% CI: bootstrap over runs, %d replicates, at most %d runs per group, where runs × (1 − p) ≥ %d",
		r.CI.Replicates, r.CI.MaxRunsPerGroup, r.CI.MinTailRuns)
}

// VerdictRuleText states how the verdicts were reached and what they
// mean taken together.
func (r *Report) VerdictRuleText() string {
	judged := 0
	for _, v := range r.Verdicts {
		switch v.Verdict {
		case VerdictFaster, VerdictSlower, VerdictNoDifference:
			judged++
		}
	}
	return verdictRuleText(judged, r.opts.Experiment)
}

// EstimateText says where percentiles come from.
func (r *Report) EstimateText() string {
	return fmt.Sprintf("batch orders weighed equally (each figure the mean of the h2first and h3first runs'); "+
		"percentiles exact (type 7) below %d samples of an outcome, unless its group was thinned; t-digest otherwise", r.ExactBelowSamples)
}
