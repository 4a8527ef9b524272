package origin

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// NEL is the Network Error Logging policy (W3C Network Error Logging and
// Reporting API) the origins send, so that browsers report, out of band,
// the requests to them that failed — DNS, TCP, TLS and QUIC errors, cut
// connections, error statuses — and a sampled share of those that
// succeeded, with the protocol used and the elapsed time: the part of the
// truth the script never sees, including visitors whose page never ran it.
//
// Both origins send it. The H2 origin's reports are the baseline: a
// failure rate of HTTP/3 means little without the same visitors' failure
// rate over TCP to the same host, and the headers change nothing about
// which protocol the H2 origin is reached over. A policy is per origin
// (scheme, host and port), so each origin must have served it before a
// browser reports on requests to it; the headers ride the first response
// on each connection, not every probe answer, so the batches measured on
// warm connections carry no extra bytes.
//
// The policy goes in three headers: NEL names a report group, Report-To
// (the Reporting API's first version, which Chromium's NEL reads its
// endpoints from) and Reporting-Endpoints (the current one) name the URL.
type NEL struct {
	// MaxAge is how long a browser keeps the policy, in whole seconds.
	// Zero sends no NEL headers at all.
	MaxAge time.Duration
	// SuccessFraction is the share of successful requests reported, 0 to 1.
	SuccessFraction float64
	// FailureFraction is the share of failed requests reported, 0 to 1.
	FailureFraction float64
	// IncludeSubdomains extends the policy to subdomains of each origin's
	// host (for which browsers report DNS failures only).
	IncludeSubdomains bool
	// Endpoint is the absolute https URL browsers upload reports to: an
	// ingest collector's /reports. Default: each origin's reports go to the
	// other origin's /reports (both served by this process), so that the
	// failures of an origin that fails still arrive.
	Endpoint string
}

// The policy `h3rum serve` sends unless told otherwise: a day's policy,
// every failure and a sample of successes (the share the report's failure
// rates are weighted by).
const (
	DefaultNELMaxAge          = 24 * time.Hour
	DefaultNELSuccessFraction = 0.01
	DefaultNELFailureFraction = 1.0
)

// nelGroup is the report group the NEL header names.
const nelGroup = "h3rum-nel"

func (n *NEL) validate() []error {
	if n.MaxAge == 0 {
		return nil
	}
	var errs []error
	if n.MaxAge < time.Second || n.MaxAge%time.Second != 0 {
		errs = append(errs, fmt.Errorf("nel max age %v: want whole seconds, at least 1 (0 sends no NEL headers)", n.MaxAge))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"nel success fraction", n.SuccessFraction}, {"nel failure fraction", n.FailureFraction}} {
		if !(f.v >= 0 && f.v <= 1) {
			errs = append(errs, fmt.Errorf("%s %v: want 0 to 1", f.name, f.v))
		}
	}
	if n.Endpoint != "" {
		if u, err := url.Parse(n.Endpoint); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			errs = append(errs, fmt.Errorf("nel endpoint %q: want an absolute https URL, e.g. https://ingest.rumtest.example.com/reports (browsers upload reports only to secure endpoints)", n.Endpoint))
		}
	}
	return errs
}

// nelHeaders are the header values an origin sends.
type nelHeaders struct {
	nel, reportTo, endpoints []string
}

// headers builds the values for reports going to endpoint.
func (n *NEL) headers(endpoint string) *nelHeaders {
	secs := int64(n.MaxAge / time.Second)
	policy, _ := json.Marshal(struct {
		ReportTo          string  `json:"report_to"`
		MaxAge            int64   `json:"max_age"`
		IncludeSubdomains bool    `json:"include_subdomains"`
		SuccessFraction   float64 `json:"success_fraction"`
		FailureFraction   float64 `json:"failure_fraction"`
	}{nelGroup, secs, n.IncludeSubdomains, round6(n.SuccessFraction), round6(n.FailureFraction)})
	type ep struct {
		URL string `json:"url"`
	}
	group, _ := json.Marshal(struct {
		Group             string `json:"group"`
		MaxAge            int64  `json:"max_age"`
		IncludeSubdomains bool   `json:"include_subdomains"`
		Endpoints         []ep   `json:"endpoints"`
	}{nelGroup, secs, n.IncludeSubdomains, []ep{{endpoint}}})
	return &nelHeaders{
		nel:       []string{string(policy)},
		reportTo:  []string{string(group)},
		endpoints: []string{nelGroup + "=" + strconv.Quote(endpoint)},
	}
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// setNEL gives both origins their headers once their ports are known.
func (s *Server) setNEL() {
	if s.NEL.MaxAge == 0 {
		return
	}
	h3URL := URL(s.H3Host, s.h3Socks.addrPort().Port())
	h2URL := URL(s.H2Host, s.h2Socks.addrPort().Port())
	to3, to2 := h2URL+"/reports", h3URL+"/reports"
	if s.NEL.Endpoint != "" {
		to3, to2 = s.NEL.Endpoint, s.NEL.Endpoint
	}
	s.h3Origin.nel = s.NEL.headers(to3)
	s.h2Origin.nel = s.NEL.headers(to2)
}

// URL is the https origin a browser reaches host:port at ("localhost"
// when no host name is configured), without the port when it is 443.
func URL(host string, port uint16) string {
	if host == "" {
		host = "localhost"
	}
	if port == 443 {
		return "https://" + host
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// set adds the policy to a response.
func (h *nelHeaders) set(w map[string][]string) {
	w["Nel"] = h.nel
	w["Report-To"] = h.reportTo
	w["Reporting-Endpoints"] = h.endpoints
}

// ViaIngest is n for a probe-only collector whose reports go to the ingest
// collector at ingestURL (an origin): without an Endpoint of its own, the
// policy sends browsers to ingestURL's /reports, and with nowhere to send
// them (ingestURL empty or not https: browsers upload only to secure
// endpoints) it is none.
func (n NEL) ViaIngest(ingestURL string) NEL {
	if n.Endpoint != "" {
		return n
	}
	u, err := url.Parse(ingestURL)
	if ingestURL == "" || err != nil || u.Scheme != "https" || u.Host == "" {
		return NEL{}
	}
	n.Endpoint = strings.TrimSuffix(ingestURL, "/") + "/reports"
	return n
}

// NELHosts are the hosts a collector keeps NEL reports about: hosts when
// given, else the origins' host names that are set (H3Host, H2Host);
// none means any.
func (s *Server) NELHosts(hosts []string) []string {
	if len(hosts) > 0 {
		return hosts
	}
	var own []string
	for _, h := range []string{s.H3Host, s.H2Host} {
		if h != "" {
			own = append(own, h)
		}
	}
	return own
}
