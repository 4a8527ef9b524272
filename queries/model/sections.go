package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/h3rum/h3rum/beacon"
)

// Curves are one group's H2 and H3 request-duration quantile curves: the
// duration in ms at each of Levels (percent), order-balanced as the
// headline's percentiles are (queries/order.go), from ClickHouse's t-digest. They
// draw where the two distributions part; the headline's percentiles and
// their intervals stay the figures to quote.
type Curves struct {
	Levels []float64 `json:"levels"`
	H2     []float64 `json:"h2_ms"` // null without H2 samples
	H3     []float64 `json:"h3_ms"` // null without H3 samples
}

// Design is a run's test design: what a report never pools across, since
// each changes the figures (more parallel requests queue more, a bigger
// body takes longer, more warm-ups warm more, a new script measures
// differently).
type Design struct {
	Parallel    int `json:"parallel"`     // requests per batch (data-parallel)
	Bytes       int `json:"bytes"`        // probe body size (data-bytes)
	Warmup      int `json:"warmup"`       // warm-ups to the H3 origin (data-warmup)
	BeaconMajor int `json:"beacon_major"` // the script's major version
	// Extra is the design parameters the script reported beyond the first
	// three, as stored (beacon.Params.Extra: "name=value,…", defaults left
	// out), "" for none.
	Extra string `json:"extra,omitempty"`
	Set   bool   `json:"-"`             // chosen by the caller rather than the most common
	All   bool   `json:"all,omitempty"` // every design pooled, on request
}

// ParseDesign reads "parallel,bytes,warmup,major[,name=value…]" (e.g.
// "5,0,2,1", or "5,0,2,1,gap=100" with an Extra), "all", or "" (the most
// common design).
func ParseDesign(s string) (Design, error) {
	switch s = strings.TrimSpace(s); s {
	case "":
		return Design{}, nil
	case "all":
		return Design{All: true}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) < 4 {
		return Design{}, InvalidOptions("design %.40q: want parallel,bytes,warmup,major[,name=value…] (e.g. 5,0,2,1) or all", s)
	}
	var v [4]int
	for i, p := range parts[:4] {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 1<<30 {
			return Design{}, InvalidOptions("design %.40q: %q is not a count", s, p)
		}
		v[i] = n
	}
	extra := strings.Join(parts[4:], ",")
	if !validExtra(extra) || (extra == "" && len(parts) > 4) {
		return Design{}, InvalidOptions("design %.40q: want name=integer after the major version", s)
	}
	return Design{Parallel: v[0], Bytes: v[1], Warmup: v[2], BeaconMajor: v[3], Extra: extra, Set: true}, nil
}

// validExtra reports whether extra has the form of a stored Extra
// (beacon.ValidExtra: par keys and integers). Nothing else reaches the
// query text.
func validExtra(extra string) bool { return beacon.ValidExtra(extra) }

// String is the design in ParseDesign's form.
func (d Design) String() string {
	if d.All {
		return "all"
	}
	s := fmt.Sprintf("%d,%d,%d,%d", d.Parallel, d.Bytes, d.Warmup, d.BeaconMajor)
	if d.Extra != "" {
		s += "," + d.Extra
	}
	return s
}

// DesignCount is one design seen in the window and its runs.
type DesignCount struct {
	Design
	Runs int `json:"runs"`
}

// FirstContact is the section "First contact with the HTTP/3 origin": how
// each run's first request to the H3 origin went (sql/run_facts.sql),
// by the report's grouping and by browser. A first request on h3 means the
// browser knew HTTP/3 before it: from before the page (an HTTPS DNS record,
// an Alt-Svc cached on an earlier visit), or from the page's own loads
// over TCP, the script's among them, which carry the origin's Alt-Svc; on
// h2, that it needed the warm-ups' Alt-Svc upgrade. It covers every design and exclusion of
// the window's browser runs (bots only with include_bots): the first
// request is made before any of them matter.
type FirstContact struct {
	By       string              `json:"by"`       // the report's grouping, of Groups
	Groups   []FirstContactCount `json:"groups"`   // most runs first, then by name
	Browsers []FirstContactCount `json:"browsers"` // the same, by browser
}

// FirstContactCount is one group's runs by how their first request to the
// H3 origin went. Runs = H3First + Upgraded + Never + NotMeasured + Unknown.
type FirstContactCount struct {
	Group string `json:"group"` // "unknown" when the attribute was empty
	Runs  int    `json:"runs"`
	// H3First: the first request used h3. Upgraded: it used h2 (or h1) and
	// a later request to the H3 origin used h3. Never: no request to the H3
	// origin used h3.
	H3First  int `json:"h3_first"`
	Upgraded int `json:"upgraded"`
	Never    int `json:"never"`
	// H3First by where the browser learnt HTTP/3 (the script's "alt",
	// beacon.AltSvc): KnownBefore, before the page (nothing from the H3
	// origin on the page before the request, or that was already over h3);
	// FromPage, from the page's own loads over TCP; Unattributed, neither
	// said (scripts before 1.4.0, a load that hid its protocol).
	KnownBefore  int `json:"h3_known_before"`
	FromPage     int `json:"h3_from_page"`
	Unattributed int `json:"h3_first_unattributed"`
	// NotMeasured: runs of warm-up 0, which send no first request to the
	// H3 origin before the batches. Unknown: the first request is missing
	// (a partial run), failed, or reported no protocol.
	NotMeasured int `json:"not_measured"`
	Unknown     int `json:"unknown"`
	// Measured is H3First + Upgraded + Never, the shares' denominator; the
	// shares are null when it is 0.
	Measured      int         `json:"measured"`
	H3FirstShare  *Proportion `json:"h3_first_share"`
	UpgradedShare *Proportion `json:"upgraded_share"`
	NeverShare    *Proportion `json:"never_share"`
	// KnownBeforeShare and FromPageShare split H3FirstShare the same way.
	KnownBeforeShare *Proportion `json:"h3_known_before_share"`
	FromPageShare    *Proportion `json:"h3_from_page_share"`
}

// Proportion is a share of runs with its 95 % Wilson score interval (runs
// are independent).
type Proportion struct {
	Share  float64  `json:"share"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
}

// Handshake is one protocol's requests on new connections in a group: what
// a first request costs (sql/handshakes.sql). It is kept apart from the
// headline, which compares warm connections only.
type Handshake struct {
	Proto        string       `json:"proto"`          // protocol the request used: h2 or h3
	Kind         string       `json:"kind,omitempty"` // agent reports: full, resumed or 0rtt (the server's word); browsers: none
	Samples      int          `json:"samples"`
	Percentiles  []Percentile `json:"percentiles"`         // request duration, ms; no intervals
	ConnectMS    []Percentile `json:"connect_percentiles"` // connection set-up (TCP+TLS, or QUIC), ms
	FastestMS    float64      `json:"fastest_ms"`          // the quickest request's duration: the path's and the protocol's floor
	ResumedShare float64      `json:"resumed_share"`       // TLS session resumed
	EarlyShare   float64      `json:"early_data_share"`    // sent as 0-RTT early data
	// Retried counts the requests whose connection paid a QUIC Retry's
	// round trip (Server-Timing retry), left out of every figure above.
	Retried int `json:"retried"`
}

// ITT is the intention-to-treat view of a group: every request by the
// origin it was sent to, failures at the timeout (sql/itt_*.sql). It answers
// "what did a visitor get by being sent to the H3 origin", fallbacks,
// failures and excluded runs included, beside the headline's like-for-like
// comparison.
type ITT struct {
	H2   *ITTStats `json:"h2"`   // requests sent to the H2 origin
	H3   *ITTStats `json:"h3"`   // requests sent to the H3 origin
	Diff []Diff    `json:"diff"` // H3 − H2 point differences; [] unless both
}

// ITTStats are one origin's requests in the intention-to-treat view.
type ITTStats struct {
	Runs           int          `json:"runs"`
	Samples        int          `json:"samples"`
	Failed         int          `json:"failed"`      // failed or timed-out requests
	FailedRuns     int          `json:"failed_runs"` // runs with at least one
	RunFailureRate float64      `json:"run_failure_rate"`
	RunFailureLow  *float64     `json:"run_failure_ci_low"` // 95 % Wilson interval over runs
	RunFailureHigh *float64     `json:"run_failure_ci_high"`
	Percentiles    []Percentile `json:"percentiles"` // t-digest, failures at 10 000 ms; no intervals
}

// SetRuns sets the runs with requests to the origin, those with a failed
// one, and their share with its 95 % Wilson interval (s may be nil).
func (s *ITTStats) SetRuns(runs, failed int) {
	if s == nil {
		return
	}
	s.Runs, s.FailedRuns = runs, failed
	s.RunFailureRate, s.RunFailureLow, s.RunFailureHigh = 0, nil, nil
	if a := RunAvailability(runs, failed); a != nil {
		s.RunFailureRate, s.RunFailureLow, s.RunFailureHigh = a.Share, a.CILow, a.CIHigh
	}
}

// ScriptErrors is the section "Script errors by browser": runs of the
// report's design that the beacon script's own errors hit, by browser and
// by the stage the script was in (sql/run_facts.sql, with first contact).
// A run cut short before its first sample is never stored, so it is not
// counted.
type ScriptErrors struct {
	SinceBeacon string                `json:"since_beacon"` // ScriptErrorsSince: the runs of older scripts are left out
	Browsers    []BrowserScriptErrors `json:"browsers"`     // most runs first, then by name
}

// BrowserScriptErrors is one browser's runs and the script errors in them,
// summed over its runs by stage (beacon.ScriptErrors' kinds).
type BrowserScriptErrors struct {
	Browser        string `json:"browser"` // "unknown" when the collector could not tell
	Runs           int    `json:"runs"`
	RunsWithErrors int    `json:"runs_with_errors"` // runs with at least one script error of any kind
	Idle           int    `json:"idle"`             // starting the run's sequence of requests
	Warmup         int    `json:"warmup"`           // a warm-up request
	Batch          int    `json:"batch"`            // a parallel request
	Timing         int    `json:"timing"`           // reading a Resource Timing entry
	Send           int    `json:"send"`             // building or sending the report
}

// Trend is H3 − H2 over time: per window (an hour, or a day for reports
// longer than query.TrendHourlyUpTo) and group, the difference at each reported
// percentile with an approximate interval, and HTTP/3 availability.
// A window whose runs are too few for an interval at a percentile (the
// MinTailRuns rule) says so: it is a gap, not a point.
type Trend struct {
	Step    string       `json:"step"` // "hour" or "day"
	Groups  []TrendGroup `json:"groups"`
	Method  string       `json:"method"`
	Windows []time.Time  `json:"windows"` // every window's start, empty ones included
}

// TrendGroup is one group's trend, a point per window of Trend.Windows
// (in that order; a window without runs of the group has zero runs and
// every difference insufficient).
type TrendGroup struct {
	Group  string       `json:"group"`
	Points []TrendPoint `json:"points"`
}

// TrendPoint is one window of a group.
type TrendPoint struct {
	RunsH2 int `json:"runs_h2"`
	RunsH3 int `json:"runs_h3"`
	// Diff is H3 − H2 at each reported percentile; MS is null with too
	// few runs of either protocol for an interval at P.
	Diff         []TrendDiff   `json:"diff"`
	Availability *Availability `json:"h3_availability"` // null without H3 runs, or by collector
}

// TrendDiff is H3 − H2 at one percentile in one window.
type TrendDiff struct {
	P            float64  `json:"p"`
	MS           *float64 `json:"ms"`
	CILowMS      *float64 `json:"ci_low_ms"`
	CIHighMS     *float64 `json:"ci_high_ms"`
	Insufficient bool     `json:"insufficient"`
}

// RunAvailability is the share of runs with every H3-batch request on h3,
// with a 95 % Wilson score interval (runs are independent; nil when no
// run had an H3 batch).
func RunAvailability(runs, available int) *Availability {
	if runs == 0 {
		return nil
	}
	n, p := float64(runs), float64(available)/float64(runs)
	const z = 1.959963984540054
	den := 1 + z*z/n
	center := (p + z*z/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / den
	lo, hi := math.Max(0, center-half), math.Min(1, center+half)
	return &Availability{Unit: "runs", WantedH3: runs, GotH3: available, Share: math.Round(p*1e6) / 1e6,
		CILow: Ptr(math.Round(lo*1e6) / 1e6), CIHigh: Ptr(math.Round(hi*1e6) / 1e6)}
}

// proportion is k of n runs, nil when n is 0.
func proportion(n, k int) *Proportion {
	a := RunAvailability(n, k)
	if a == nil {
		return nil
	}
	return &Proportion{Share: a.Share, CILow: a.CILow, CIHigh: a.CIHigh}
}

// FirstContactCounts finishes each group's counts (measured, unknown, the shares)
// and lists them by runs, most first, then by name.
func FirstContactCounts(m map[string]*FirstContactCount) []FirstContactCount {
	out := make([]FirstContactCount, 0, len(m))
	for _, c := range m {
		c.Measured = c.H3First + c.Upgraded + c.Never
		c.Unknown = c.Runs - c.NotMeasured - c.Measured
		c.Unattributed = c.H3First - c.KnownBefore - c.FromPage
		c.H3FirstShare, c.UpgradedShare, c.NeverShare = proportion(c.Measured, c.H3First), proportion(c.Measured, c.Upgraded), proportion(c.Measured, c.Never)
		c.KnownBeforeShare, c.FromPageShare = proportion(c.Measured, c.KnownBefore), proportion(c.Measured, c.FromPage)
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b FirstContactCount) int {
		if a.Runs != b.Runs {
			return cmp.Compare(b.Runs, a.Runs)
		}
		return strings.Compare(a.Group, b.Group)
	})
	return out
}
