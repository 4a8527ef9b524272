// Package model is the answer of h3rum's regional HTTP/3-versus-HTTP/2
// report: its JSON types, each section's result among them, the options a
// request or flags parse into, a group's figures from its fetched runs
// (exact percentiles, bootstrap intervals), the verdict rule and the
// sentences that describe a report. It runs no SQL and serves nothing, so
// that the outputs draw a report without the package that computes it.
package model

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/stats"
)

// ReportVersion is the version of the JSON shape (see REPORT.md).
const ReportVersion = 1

// percentiles are those reported for every protocol, in percent: the one list,
// stats.Percentiles.
var percentiles = stats.Percentiles

// Outcome names, as the samples' outcome column spells them: the
// classification of a request by the origin it was sent to (want) and the
// protocol it used (got), made once at ingest (store.OutcomeOf).
var (
	OutcomeH2            = store.OutcomeH2.String()            // want h2, got h2
	OutcomeH3            = store.OutcomeH3.String()            // want h3, got h3
	OutcomeWantedH3GotH2 = store.OutcomeWantedH3GotH2.String() // want h3, got h2 or h1: UDP blocked or QUIC broken
	OutcomeOther         = store.OutcomeOther.String()         // anything else (unknown protocol, h1 on the h2 origin, …)
)

// Report is the regional comparison of HTTP/3 and HTTP/2 for one window.
// Its JSON shape is documented in REPORT.md and stable within Version.
type Report struct {
	Version int       `json:"version"`
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	Site    string    `json:"site"` // "" = all sites
	By      string    `json:"by"`
	MinRuns int       `json:"min_runs"`
	Filters Filters   `json:"filters"`
	// Design is the one test design the report covers; Designs lists every
	// design in the window with its runs (rollup estimate), most first.
	Design      Design        `json:"design"`
	Designs     []DesignCount `json:"designs"`
	Source      string        `json:"source"` // "rollup" or "raw": where point estimates came from
	Percentiles []float64     `json:"percentiles"`
	// ExactBelowSamples is the size under which an outcome's percentiles
	// are exact (Stats.Exact; the constant of that name).
	ExactBelowSamples int      `json:"exact_below_samples"`
	CI                CIMethod `json:"ci"`
	// SiteWide is the site-wide line, every visitor's run weighing the same
	// (complete report; null in an estimate and without runs; site.go).
	SiteWide *SiteWide `json:"site_wide"`
	// Verdicts say the answer per group, in the groups' order: faster,
	// slower or no difference detectable at one percentile (VerdictRule,
	// verdict.go), or how many runs are missing.
	Verdicts []Verdict `json:"verdicts"`
	Groups   []Group   `json:"groups"`
	Timeline []Hour    `json:"timeline"`
	// NEL is what browsers' Network Error Logging reported about the two
	// origins (complete report; null in an estimate).
	NEL *NEL `json:"nel"`
	// Trend is H3 − H2 and HTTP/3 availability per hour or day (complete
	// report; null in an estimate; queries/trend.go).
	Trend *Trend `json:"trend"`
	// ScriptErrors is the beacon script's own errors by browser (complete
	// report; null in an estimate and in an agent report; queries/runfacts.go).
	ScriptErrors *ScriptErrors `json:"script_errors"`
	// FirstContact is how each run's first request to the HTTP/3 origin
	// went, by group and by browser (complete report; null in an estimate
	// and in an agent report; queries/runfacts.go).
	FirstContact *FirstContact `json:"first_contact"`
	// Sections holds, under its name, what a section added after this
	// version's fields were fixed (REPORT.md, "Sections"); omitted while
	// none has.
	Sections map[string]any `json:"sections,omitempty"`
	// Stages is how long each step of Run took (not part of the JSON).
	Stages []Stage `json:"-"`

	// How it was computed, set by Finish: the options, defaults
	// resolved, and whether it is complete.
	opts Options
	done bool
	mu   sync.Mutex // guards Sections, which sections fill at once
}

// Finish turns groups into r's Groups, most runs first, with the
// comparison fields that need both protocols; then records how r was
// computed — o, its defaults resolved, and whether r is complete — and
// judges each group by o's verdict rule (VerdictRule), in the groups'
// order.
func (r *Report) Finish(groups []*Group, o Options, complete bool) {
	r.Groups = r.Groups[:0]
	for _, g := range groups {
		finishGroup(g, &o)
		r.Groups = append(r.Groups, *g)
	}
	slices.SortFunc(r.Groups, func(a, b Group) int {
		if c := cmp.Compare(b.Runs, a.Runs); c != 0 {
			return c
		}
		return cmp.Compare(a.Group, b.Group)
	})
	r.opts, r.done = o, complete
	rule := o.verdictRule()
	r.Verdicts = make([]Verdict, 0, len(r.Groups))
	for i := range r.Groups {
		r.Verdicts = append(r.Verdicts, rule.Judge(&r.Groups[i]))
	}
}

// Put sets a section's result under its name in Sections: the place of a
// section the report's version does not name a field for. No section of
// this version needs it; a new one does until it gets a field. Sections
// that run at once may call it together.
func (r *Report) Put(name string, v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Sections == nil {
		r.Sections = map[string]any{}
	}
	r.Sections[name] = v
}

// Stage is the wall time of one step of Run.
type Stage struct {
	Name    string // points, failures, timeline, runs (fetch and bootstrap)
	Elapsed time.Duration
}

// Filters says which samples the report includes beyond the default
// (parallel batches, successful requests, non-bot runs).
type Filters struct {
	IncludeWarmup   bool `json:"include_warmup"`
	IncludeFailed   bool `json:"include_failed"`
	IncludeBots     bool `json:"include_bots"`
	IncludeExcluded bool `json:"include_excluded"`
	// Continent and Country are the place filter (continent=, country=):
	// absent when the report covers every place.
	Continent string `json:"continent,omitempty"`
	Country   string `json:"country,omitempty"`
	// HeadlineOnly: the report was asked for its headline alone
	// (headline=1), its other sections left out.
	HeadlineOnly bool `json:"headline_only,omitempty"`
}

// CIMethod describes how confidence intervals were computed.
type CIMethod struct {
	Method          string  `json:"method"` // "cluster_bootstrap_runs" or "none"
	Level           float64 `json:"level"`  // 0.95
	Replicates      int     `json:"replicates"`
	MaxRunsPerGroup int     `json:"max_runs_per_group"`
	Seed            uint64  `json:"seed"`
	// MinTailRuns is K of the sufficiency rule: an interval at percentile
	// p needs runs × (1 − p/100) ≥ K (MinTailRuns).
	MinTailRuns int `json:"min_tail_runs"`
}

// Group is one region (or browser, ASN, …) of the report.
type Group struct {
	Group string `json:"group"` // "unknown" when the attribute was empty
	// Runs and Samples count every selected sample of the group, whatever
	// its outcome.
	Runs    int `json:"runs"`
	Samples int `json:"samples"`
	// TooSmall is set when H2 or H3 has fewer than MinRuns runs (or none):
	// the comparison is shown but not to be trusted.
	TooSmall      bool          `json:"too_small"`
	H2            *Stats        `json:"h2"`
	H3            *Stats        `json:"h3"`
	WantedH3GotH2 *Stats        `json:"wanted_h3_got_h2"`
	Other         *Stats        `json:"other"`
	Diff          []Diff        `json:"diff"` // H3 − H2 per percentile; empty unless both exist
	Paired        *Paired       `json:"paired"`
	Availability  *Availability `json:"h3_availability"`
	Failures      []Failure     `json:"failures"`
	// DesignRuns counts the group's runs of the report's design before
	// exclusions; Excluded, the runs left out of the headline by reason
	// (a run under each reason it has). Both come with the complete report.
	DesignRuns int            `json:"design_runs"`
	Excluded   map[string]int `json:"excluded_runs"`
	// ColdRuns counts the cold runs by the origin of their cold requests
	// (h2, h3); a run cold on both sides counts in both.
	ColdRuns map[string]int `json:"cold_runs_by_origin"`
	// ITT is the intention-to-treat view (complete report).
	ITT *ITT `json:"intention_to_treat"`
	// Handshakes are the requests on new connections by protocol
	// (complete report): the cost of a first request, apart from the
	// warm comparison.
	Handshakes []Handshake `json:"handshakes"`
	// Curves are the H2 and H3 quantile curves (complete report; null in
	// an estimate): the dashboard's distribution view.
	Curves *Curves `json:"curves"`
	// BootstrapRuns is how many runs the bootstrap and the paired view
	// used: all runs, or a uniform sample of about MaxRunsPerGroup.
	BootstrapRuns int  `json:"bootstrap_runs"`
	Sampled       bool `json:"sampled"`
}

// OutcomeStats is one outcome of a group and its figures (Stats is nil
// when the group has no such sample).
type OutcomeStats struct {
	Outcome string // OutcomeH2, …
	Stats   *Stats
}

// Outcomes lists g's outcomes in the report's order.
func (g *Group) Outcomes() []OutcomeStats {
	return []OutcomeStats{{OutcomeH2, g.H2}, {OutcomeH3, g.H3}, {OutcomeWantedH3GotH2, g.WantedH3GotH2}, {OutcomeOther, g.Other}}
}

// Stats are the figures of one outcome in one group.
type Stats struct {
	Runs     int  `json:"runs"`
	Samples  int  `json:"samples"`
	TooSmall bool `json:"too_small"`
	// Exact is set when the percentiles are exact type-7 quantiles of all
	// the samples, computed in Go, rather than ClickHouse's t-digest.
	Exact bool `json:"exact"`
	// RunsByOrder counts the runs of each batch order. Percentiles are the
	// mean of each order's (queries/order.go): both orders weigh half, whatever
	// their shares; with one order only, they are that order's.
	RunsByOrder OrderRuns    `json:"runs_by_order"`
	Percentiles []Percentile `json:"percentiles"`

	// fetchedRuns counts, exactly, the runs with a sample of the outcome
	// among those the bootstrap fetched (Settle): the runs its intervals
	// stand on. 0 before the bootstrap.
	fetchedRuns int
}

// OrderRuns counts runs per batch order: the parallel batch the script
// started first.
type OrderRuns struct {
	H2First int `json:"h2first"`
	H3First int `json:"h3first"`
}

// Percentile is one request-duration percentile in milliseconds, with its
// 95 % confidence interval (null when none could be computed).
type Percentile struct {
	P        float64  `json:"p"`
	MS       float64  `json:"ms"`
	CILowMS  *float64 `json:"ci_low_ms"`
	CIHighMS *float64 `json:"ci_high_ms"`
	// Insufficient is set when the outcome has too few runs for an
	// interval at P (MinTailRuns): MS is shown, not to be trusted, and the
	// interval is null.
	Insufficient bool `json:"insufficient"`
}

// Diff is H3 − H2 at one percentile: negative means HTTP/3 is faster.
type Diff struct {
	P         float64  `json:"p"`
	MS        float64  `json:"ms"`
	CILowMS   *float64 `json:"ci_low_ms"`
	CIHighMS  *float64 `json:"ci_high_ms"`
	Pct       float64  `json:"pct"` // 100 × (H3 − H2) / H2
	CILowPct  *float64 `json:"ci_low_pct"`
	CIHighPct *float64 `json:"ci_high_pct"`
	// Insufficient is set when H2 or H3 is insufficient at P; the
	// intervals are then null.
	Insufficient bool `json:"insufficient"`
}

// Paired is the within-run comparison: for each run whose parallel H3
// batch used h3 throughout and which has both batches, the median of its
// H3 batch minus the median of its H2 batch.
type Paired struct {
	Runs           int      `json:"runs"`
	MedianMS       float64  `json:"median_ms"`
	MedianCILowMS  *float64 `json:"median_ci_low_ms"`
	MedianCIHighMS *float64 `json:"median_ci_high_ms"`
	P90MS          float64  `json:"p90_ms"`
	P90CILowMS     *float64 `json:"p90_ci_low_ms"`
	P90CIHighMS    *float64 `json:"p90_ci_high_ms"`
	// P90MS is the 90th percentile over runs of the per-run difference
	// (not a difference of p90s): 90 % of runs saw H3 − H2 at most this.
	// Win, tie and loss split the runs by that difference: H3 faster by at
	// least PairTieMS, within it, slower by at least it.
	H3WonShare  float64  `json:"h3_won_share"`
	H3WonCILow  *float64 `json:"h3_won_ci_low"`
	H3WonCIHigh *float64 `json:"h3_won_ci_high"`
	H3TieShare  float64  `json:"h3_tie_share"`
	H3LostShare float64  `json:"h3_lost_share"`
	// ByOrder is the median difference of the runs that started their H2
	// batch first and of those that started the H3 batch first (the
	// script picks at random): a gap between them is an order effect.
	ByOrder []PairedOrder `json:"by_order"`
	// Histogram of the differences: Counts[i] runs fell in
	// [Edges[i], Edges[i+1]) ms; the outer bins also hold the tails.
	Histogram Histogram `json:"histogram"`
}

// PairedOrder is the paired view of the runs of one batch order.
type PairedOrder struct {
	Order    string   `json:"order"` // "h2first" or "h3first"
	Runs     int      `json:"runs"`
	MedianMS *float64 `json:"median_ms"` // null without runs
}

// Histogram is a binned distribution.
type Histogram struct {
	Edges  []float64 `json:"edges_ms"`
	Counts []int     `json:"counts"`
}

// Availability is the share of requests sent to the H3 origin that used
// h3, out of those that used h3, h2 or h1 (unknown protocols excluded).
type Availability struct {
	// Unit is what WantedH3 and GotH3 count: "runs" (runs with an H3 batch,
	// and those whose every H3-batch request used h3) in a complete
	// report, "requests" in an estimate.
	Unit     string   `json:"unit"`
	WantedH3 int      `json:"wanted_h3"`
	GotH3    int      `json:"got_h3"`
	Share    float64  `json:"share"`
	CILow    *float64 `json:"ci_low"`
	CIHigh   *float64 `json:"ci_high"`
}

// Failure counts failed requests of one group by origin and error code.
type Failure struct {
	Origin  string `json:"origin"` // protocol of the origin the request was sent to
	Error   string `json:"error"`
	Samples int    `json:"samples"`
}

// Hour counts selected samples per outcome in one hour.
type Hour struct {
	Hour          time.Time `json:"hour"`
	H2            int       `json:"h2"`
	H3            int       `json:"h3"`
	WantedH3GotH2 int       `json:"wanted_h3_got_h2"`
	Other         int       `json:"other"`
}

// NEL is the report's Network Error Logging section: failed requests to
// the two origins that browsers reported out of band (including visitors
// whose page never ran the script), by group, NEL type and protocol, and
// per protocol the sampled successful requests with the elapsed time NEL
// measured beside the beacon's request duration. Every count of requests
// is estimated: a report sent under sampling fraction f stands for 1/f
// requests. It covers every site.
type NEL struct {
	// By is the grouping of Failures: the report's, or continent when
	// nel_reports cannot be grouped that way (connection, collector).
	By        string        `json:"by"`
	Failures  []NELFailure  `json:"failures"`
	Protocols []NELProtocol `json:"protocols"`
}

// NELFailure is one kind of failure in one group.
type NELFailure struct {
	Group string `json:"group"`
	Type  string `json:"type"`  // NEL type: tcp.refused, quic.protocol, http.error, …
	Phase string `json:"phase"` // dns, connection or application
	Proto string `json:"proto"` // h1, h2, h3 or unknown (no protocol yet)
	// Reports is how many reports were stored; Estimated, how many failed
	// requests they stand for (sum of 1 / sampling fraction).
	Reports   int     `json:"reports"`
	Estimated float64 `json:"estimated_requests"`
}

// NELProtocol is what NEL says about one protocol.
type NELProtocol struct {
	Proto           string  `json:"proto"`
	OKReports       int     `json:"ok_reports"`
	OKEstimated     float64 `json:"ok_estimated_requests"`
	FailedEstimated float64 `json:"failed_estimated_requests"`
	// FailureShare is FailedEstimated / (FailedEstimated + OKEstimated),
	// null when no successful request was reported (success sampling off).
	FailureShare *float64 `json:"failure_share"`
	// ProbeOKReports are the successful /probe requests reported, whose
	// NEL elapsed_time gives Elapsed (empty when there are none).
	ProbeOKReports int          `json:"probe_ok_reports"`
	Elapsed        []Percentile `json:"elapsed_percentiles"`
	// BeaconSamples and Beacon are the beacon's successful probe requests
	// of this protocol in the window (warm-ups included, every site) and
	// their durations: the script's view beside the browser's.
	BeaconSamples int          `json:"beacon_samples"`
	Beacon        []Percentile `json:"beacon_percentiles"`
}

// Complete reports whether r is a complete report (Run, or Estimate then
// AddRuns): intervals and the paired view are in.
func (r *Report) Complete() bool { return r.done }

// Options returns the options r was computed with, defaults resolved.
func (r *Report) Options() Options { return r.opts }

// OrderNames are the batch orders as param_order spells them, by index
// (stats.H2First, stats.H3First).
func OrderNames() [2]string { return [2]string{"h2first", "h3first"} }

// PairTieMS is the paired difference below which (in absolute value) a
// run is a tie (stats.PairTieMS).
const PairTieMS = stats.PairTieMS
