// Package access decides who a request comes from and what it may do:
// the client address behind trusted proxies and bearer tokens.
package access

import (
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP returns the address of the client that sent r. It is the socket
// peer, unless the peer is inside one of the trusted proxy prefixes: then
// the forwarding headers are read — Forwarded (RFC 7239) when present, else
// X-Forwarded-For — from the right, skipping trusted hops, and the first
// untrusted address is the client. A malformed or obfuscated hop stops the
// walk at the nearest address already vouched for, so a client cannot
// choose its own address by sending a forged header. The zero Addr means
// the peer address could not be parsed.
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	var addr netip.Addr
	if err == nil {
		addr = peer.Addr()
	} else if a, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		addr = a
	} else {
		return netip.Addr{}
	}
	addr = addr.Unmap().WithZone("")
	if !isTrusted(addr, trusted) {
		return addr
	}
	var hops []string
	if fw := r.Header.Values("Forwarded"); len(fw) > 0 {
		hops = forwardedFor(fw)
	} else {
		for _, v := range r.Header.Values("X-Forwarded-For") {
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
		if !isTrusted(a, trusted) {
			return a
		}
	}
	return addr
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
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
