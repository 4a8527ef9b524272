package origin

import (
	"net/http"

	"github.com/h3rum/h3rum/ingest/access"
)

// headerValues are the header values the server sets, built once so that
// handlers assign them to the header map without allocating. They are
// never modified after Start; every slice has len == cap, so an append by
// a later handler copies rather than writes into them.
type headerValues struct {
	noStore, textPlain, octetStream []string
	probeAllow, getHead             []string
	any, varyOrigin                 []string
	preflightMethods, maxAge        []string
	retryAfter1                     []string
}

func newHeaderValues() headerValues {
	one := func(v string) []string { return []string{v} }
	return headerValues{
		noStore:          one("no-store"),
		textPlain:        one("text/plain; charset=utf-8"),
		octetStream:      one("application/octet-stream"),
		probeAllow:       one("GET, HEAD, POST, OPTIONS"),
		getHead:          one("GET, HEAD"),
		any:              one("*"),
		varyOrigin:       one("Origin"),
		preflightMethods: one("GET, HEAD, POST, OPTIONS"),
		maxAge:           one("86400"),
		retryAfter1:      one("1"),
	}
}

// corsPolicy decides which page origins may read /probe responses and
// their timings (CORS and Timing-Allow-Origin): the collector's one rule,
// access.Origins, which also decides who may post reports.
type corsPolicy struct {
	access.Origins
}

// newCORSPolicy checks and compiles an allowlist; nil or empty means "*".
func newCORSPolicy(allow []string) (corsPolicy, error) {
	o, err := access.ParseOrigins(allow)
	return corsPolicy{o}, err
}

// apply sets Access-Control-Allow-Origin and Timing-Allow-Origin for an
// allowed Origin. (Server-Timing reaches the page through Resource Timing,
// which Timing-Allow-Origin opens; Access-Control-Expose-Headers would only
// matter to a script reading the header itself, and costs bytes on every
// probe.) With an allowlist the matching origin is echoed and the
// response varies by Origin; a request from another origin gets neither, so
// the browser hides the response and its timings from that page.
func (p *corsPolicy) apply(h http.Header, r *http.Request, hv *headerValues) {
	if p.Any() {
		h["Access-Control-Allow-Origin"] = hv.any
		h["Timing-Allow-Origin"] = hv.any
		return
	}
	h["Vary"] = hv.varyOrigin
	o := r.Header["Origin"]
	if len(o) != 1 || !p.Allows(o[0]) {
		return
	}
	h["Access-Control-Allow-Origin"] = o
	h["Timing-Allow-Origin"] = o
}

// preflight answers a CORS preflight: any method /probe serves and any
// request headers the page asks for, cached by the browser for a day.
func (p *corsPolicy) preflight(h http.Header, r *http.Request, hv *headerValues) {
	if r.Header.Get("Access-Control-Request-Method") == "" {
		return
	}
	h["Access-Control-Allow-Methods"] = hv.preflightMethods
	if rh := r.Header["Access-Control-Request-Headers"]; len(rh) > 0 {
		h["Access-Control-Allow-Headers"] = rh
	}
	h["Access-Control-Max-Age"] = hv.maxAge
}
