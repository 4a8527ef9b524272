// Package beacontest builds wire-format reports for tests: the one fixture
// the beacon, ingest and collector tests share.
package beacontest

import (
	"fmt"
	"strings"
)

// Run describes a test report. Zero fields take the defaults noted.
type Run struct {
	ID       string // 32 hex digits; required
	Site     string // default "example.com"
	Origin   string // page origin; default "https://www.example.com"
	Warmup   int    // sequential warm-up requests to the H3 origin; default 1 (the script's is 2)
	Parallel int    // requests per parallel batch; default 5
	Brands   string // UA-CH brands as wire JSON; default a Chrome 121
	// Alt is the report's "alt"; 0 (the default) makes a wire v1 report,
	// which has none, any other value a v2 report carrying it.
	Alt int
}

// Report returns r in wire format: Warmup sequential H3 requests, one H2
// warm-up, then a parallel H3 batch and a parallel H2 batch, each request
// served over the protocol its origin wants (1+1+5+5 = 12 samples by
// default, a realistic run).
func Report(r Run) []byte {
	if r.Site == "" {
		r.Site = "example.com"
	}
	if r.Origin == "" {
		r.Origin = "https://www.example.com"
	}
	if r.Warmup == 0 {
		r.Warmup = 1
	}
	if r.Parallel == 0 {
		r.Parallel = 5
	}
	if r.Brands == "" {
		r.Brands = `[["Not A(Brand","99"],["Google Chrome","121"],["Chromium","121"]]`
	}
	var b strings.Builder
	if r.Alt == 0 {
		fmt.Fprintf(&b, `{"v":1,"id":%q,"site":%q,"o":%q,"bv":"1.0.0","p":false,"mt":3.5,`, r.ID, r.Site, r.Origin)
	} else {
		fmt.Fprintf(&b, `{"v":2,"id":%q,"site":%q,"o":%q,"bv":"1.4.0","p":false,"mt":3.5,"alt":%d,`, r.ID, r.Site, r.Origin, r.Alt)
	}
	fmt.Fprintf(&b, `"par":{"n":%d,"w":%d,"b":0,"ord":"h3first","trg":"load"},`, r.Parallel, r.Warmup)
	fmt.Fprintf(&b, `"c":{"br":%s,"pf":"Linux","mb":false,"et":"4g","rtt":50,"dl":10},"s":[`, r.Brands)
	total := r.Warmup + 1 + 2*r.Parallel
	for q := range total {
		ph, want := "p", "h2"
		switch {
		case q < r.Warmup:
			ph, want = "w", "h3"
		case q == r.Warmup:
			ph, want = "w", "h2"
		case q <= r.Warmup+r.Parallel:
			want = "h3"
		}
		if q > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"q":%d,"ph":%q,"w":%q,"g":%q,"st":%d.25,"d":%d.5,"dns":0,"con":0,"tls":0,"tf":20.125,"dl":1.5,"r":true,"ts":300,`,
			q, ph, want, want, 10*q, 30+q)
		// One connection per origin, opened by its warm-up: every batch
		// request is on a warm connection.
		fmt.Fprintf(&b, `"sv":{"proto":%q,"app":0.05,"rtt":21.5,"minrtt":20,"rttvar":1.25,"lost":0,"cid":"c%s","creq":%d,"resumed":0,"early":0}}`, want, want, q+1)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
