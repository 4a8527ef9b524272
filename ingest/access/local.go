package access

import (
	"errors"
	"fmt"
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

// CheckOpen returns nil when a process listening on listeners and trusting
// the proxies trusted may answer its report endpoints without a token, or
// why it may not: every listener must be bound to loopback, so that no
// request comes from another machine directly, and no proxy may be trusted
// (one on this host makes every request it forwards look local). What no
// check can see, a pass-through proxy on the same host (HAProxy in TCP
// mode, nginx stream, sslh, ssh -L), relays the internet to a loopback
// listener; that is why open mode is the operator's explicit choice and
// never inferred from where a request comes from.
func CheckOpen(listeners []string, trusted []netip.Prefix) error {
	for _, l := range listeners {
		if !LoopbackListener(l) {
			return fmt.Errorf("listener %q is not bound to loopback only (localhost, 127.0.0.0/8 or ::1)", l)
		}
	}
	if len(trusted) > 0 {
		return errors.New("proxies are trusted, and a proxy on this host makes every request it forwards look local")
	}
	return nil
}
