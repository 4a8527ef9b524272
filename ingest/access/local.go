package access

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// forwardingHeaders are the headers proxies add; a request carrying any of
// them was forwarded, so its loopback peer says nothing about its sender.
var forwardingHeaders = []string{
	"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip",
	"Via", "Cf-Connecting-Ip", "True-Client-Ip", "X-Client-Ip", "Fastly-Client-Ip", "X-Cluster-Client-Ip",
}

// Local reports whether r comes from this machine with nothing in between
// and names this machine: its peer is a loopback address, it carries no
// forwarding header (extra names the configured client IP header, if
// any), and its Host is "localhost" or a loopback address. A browser page
// on another site that rebinds its own name to 127.0.0.1 still sends that
// name as Host, and a reverse proxy on the same host adds forwarding
// headers, so neither passes.
func Local(r *http.Request, extra string) bool {
	if p := Peer(r); !p.IsValid() || !p.IsLoopback() {
		return false
	}
	for _, h := range forwardingHeaders {
		if _, ok := r.Header[h]; ok {
			return false
		}
	}
	if extra != "" {
		if _, ok := r.Header[http.CanonicalHeaderKey(extra)]; ok {
			return false
		}
	}
	return LoopbackHost(r.Host)
}

// LoopbackHost reports whether host (with or without a port) is
// "localhost" or a loopback address.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// LoopbackListener reports whether a listen address (host:port) binds
// loopback addresses only: "localhost", 127.0.0.0/8 or ::1. An empty host
// (every address) is not loopback.
func LoopbackListener(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	return LoopbackHost(host)
}
