package queries

import (
	"cmp"
	"slices"
	"strings"
)

// FirstContact is the section "First contact with the HTTP/3 origin": how
// each run's first request to the H3 origin went (sql/run_facts.sql),
// by the report's grouping and by browser. A first request on h3 means the
// browser found HTTP/3 before this run's responses could advertise it (an
// HTTPS DNS record, or an Alt-Svc cached from an earlier visit); on h2, that
// it needed the Alt-Svc upgrade. It covers every design and exclusion of
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
}

// Proportion is a share of runs with its 95 % Wilson score interval (runs
// are independent).
type Proportion struct {
	Share  float64  `json:"share"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
}

// proportion is k of n runs, nil when n is 0.
func proportion(n, k int) *Proportion {
	a := runAvailability(n, k)
	if a == nil {
		return nil
	}
	return &Proportion{Share: a.Share, CILow: a.CILow, CIHigh: a.CIHigh}
}

// countsOf finishes each group's counts (measured, unknown, the shares)
// and lists them by runs, most first, then by name.
func countsOf(m map[string]*FirstContactCount) []FirstContactCount {
	out := make([]FirstContactCount, 0, len(m))
	for _, c := range m {
		c.Measured = c.H3First + c.Upgraded + c.Never
		c.Unknown = c.Runs - c.NotMeasured - c.Measured
		c.H3FirstShare, c.UpgradedShare, c.NeverShare = proportion(c.Measured, c.H3First), proportion(c.Measured, c.Upgraded), proportion(c.Measured, c.Never)
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
