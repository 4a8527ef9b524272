// Package access decides who a request comes from and what it may do: the
// client address behind trusted proxies, bearer tokens and the throttle on
// wrong ones, per-client rate limits, when the report endpoints may be
// served without a token, and which of its own files h3rum trusts.
package access

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// DefaultClientIPHeader is the header trusted proxies put the client address
// in, unless configured otherwise.
const DefaultClientIPHeader = "X-Forwarded-For"

// Clients resolves the client address of a request. The socket peer is the
// client unless it is one of TrustedProxies; then exactly one header,
// Header, is read, from the right, skipping trusted hops, and the first
// untrusted address is the client (rightmost-untrusted). Every other
// forwarding header is ignored, so a client cannot choose its own address
// by sending one the proxy passes through untouched. The zero Clients
// trusts no proxy.
type Clients struct {
	// TrustedProxies are the peers (load balancers, CDNs, reverse proxies)
	// whose Header is believed. Empty trusts none.
	TrustedProxies []netip.Prefix
	// Header carries the client address when the peer is trusted:
	// "X-Forwarded-For" (the default; comma-separated hops), "Forwarded"
	// (RFC 7239 for= parameters), or a single-address header set by a CDN
	// such as "CF-Connecting-IP" or "True-Client-IP".
	Header string
}

// Validate checks the header name.
func (c *Clients) Validate() error {
	if c.Header != "" && !validToken(c.Header) {
		return fmt.Errorf("client IP header %q is not a header name", c.Header)
	}
	return nil
}

func (c *Clients) header() string {
	if c.Header == "" {
		return DefaultClientIPHeader
	}
	return http.CanonicalHeaderKey(c.Header)
}

// Peer is the socket peer's address; the zero Addr when RemoteAddr cannot
// be parsed.
func Peer(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

// PeerTrusted reports whether r came straight from a trusted proxy, whose
// headers (the client address, a CDN's country) may be believed.
func (c *Clients) PeerTrusted(r *http.Request) bool {
	p := Peer(r)
	return p.IsValid() && c.trusted(p)
}

// IP returns the address of the client that sent r. A malformed or
// obfuscated hop stops the walk at the nearest address already vouched
// for. The zero Addr means the peer address could not be parsed.
func (c *Clients) IP(r *http.Request) netip.Addr {
	addr := Peer(r)
	if !addr.IsValid() || !c.trusted(addr) {
		return addr
	}
	var hops []string
	name := c.header()
	if name == "Forwarded" {
		hops = forwardedFor(r.Header.Values(name))
	} else {
		for _, v := range r.Header.Values(name) {
			for h := range strings.SplitSeq(v, ",") {
				hops = append(hops, strings.TrimSpace(h))
			}
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			return addr
		}
		addr = a
		if !c.trusted(a) {
			return a
		}
	}
	return addr
}

func (c *Clients) trusted(a netip.Addr) bool {
	return Prefixes(c.TrustedProxies).Contains(a)
}

// forwardedFor returns the for= values of Forwarded header lines, in order;
// an element without for= yields "" (a hop that cannot be trusted past).
func forwardedFor(lines []string) []string {
	var hops []string
	for _, line := range lines {
		for elem := range strings.SplitSeq(line, ",") {
			v := ""
			for pair := range strings.SplitSeq(elem, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(k, "for") {
					v = strings.Trim(strings.TrimSpace(val), `"`)
				}
			}
			hops = append(hops, v)
		}
	}
	return hops
}

// parseHop parses "1.2.3.4", "1.2.3.4:5678", "2001:db8::1" or
// "[2001:db8::1]:4711"; "unknown" and "_obfuscated" identifiers fail.
func parseHop(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// validToken reports whether s is an HTTP token (a valid header name).
func validToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}
