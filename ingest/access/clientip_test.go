package access

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	mapped := []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")} // as the origin reads it: 10.0.0.0/8
	for _, tc := range []struct {
		name    string
		remote  string
		xff     []string
		fwd     []string
		trusted []netip.Prefix
		want    string
		header  string
	}{
		{"peer only", "203.0.113.5:1234", nil, nil, trusted, "203.0.113.5", ""},
		{"untrusted peer ignores xff", "203.0.113.5:1234", []string{"198.51.100.1"}, nil, trusted, "203.0.113.5", ""},
		{"untrusted peer ignores forwarded", "203.0.113.5:1234", nil, []string{"for=198.51.100.1"}, trusted, "203.0.113.5", ""},
		{"no trusted list", "10.1.1.1:1234", []string{"198.51.100.1"}, nil, nil, "10.1.1.1", ""},
		{"trusted peer xff", "10.1.1.1:1234", []string{"198.51.100.1"}, nil, trusted, "198.51.100.1", ""},
		{"rightmost untrusted", "10.1.1.1:1234", []string{"6.6.6.6, 198.51.100.1, 10.2.2.2"}, nil, trusted, "198.51.100.1", ""},
		{"spoofed left ignored", "10.1.1.1:1234", []string{"1.2.3.4", "198.51.100.1"}, nil, trusted, "198.51.100.1", ""},
		{"all trusted gives leftmost", "10.1.1.1:1234", []string{"10.3.3.3, 10.2.2.2"}, nil, trusted, "10.3.3.3", ""},
		{"malformed hop stops", "10.1.1.1:1234", []string{"198.51.100.1, garbage, 10.2.2.2"}, nil, trusted, "10.2.2.2", ""},
		{"malformed last hop gives peer", "10.1.1.1:1234", []string{"198.51.100.1, garbage"}, nil, trusted, "10.1.1.1", ""},
		{"empty xff gives peer", "10.1.1.1:1234", []string{""}, nil, trusted, "10.1.1.1", ""},
		{"xff with port", "10.1.1.1:1234", []string{"198.51.100.1:5555"}, nil, trusted, "198.51.100.1", ""},
		// A proxy that appends X-Forwarded-For passes a client's own
		// Forwarded through untouched: it must not count.
		{"client-sent forwarded ignored", "10.1.1.1:1234", []string{"198.51.100.1"}, []string{"for=6.6.6.6"}, trusted, "198.51.100.1", ""},
		{"forwarded", "10.1.1.1:1234", nil, []string{`for=192.0.2.60;proto=http;by=203.0.113.43`}, trusted, "192.0.2.60", "Forwarded"},
		{"forwarded ipv6 quoted", "10.1.1.1:1234", nil, []string{`for="[2001:db8:cafe::17]:4711"`}, trusted, "2001:db8:cafe::17", "forwarded"},
		{"forwarded chain", "10.1.1.1:1234", nil, []string{`for=6.6.6.6, for=198.51.100.9`, `for=10.9.9.9`}, trusted, "198.51.100.9", "Forwarded"},
		{"forwarded configured, xff ignored", "10.1.1.1:1234", []string{"6.6.6.6"}, []string{"for=198.51.100.9"}, trusted, "198.51.100.9", "Forwarded"},
		{"forwarded configured, only xff", "10.1.1.1:1234", []string{"6.6.6.6"}, nil, trusted, "10.1.1.1", "Forwarded"},
		{"forwarded unknown", "10.1.1.1:1234", nil, []string{"for=198.51.100.9, for=unknown"}, trusted, "10.1.1.1", "Forwarded"},
		{"forwarded obfuscated", "10.1.1.1:1234", nil, []string{"for=_hidden"}, trusted, "10.1.1.1", "Forwarded"},
		{"forwarded without for", "10.1.1.1:1234", nil, []string{"proto=https"}, trusted, "10.1.1.1", "Forwarded"},
		{"ipv6 peer", "[2001:db8::1]:443", nil, nil, trusted, "2001:db8::1", ""},
		{"ipv6 trusted peer", "[fd00::1]:443", []string{"2001:db8::7"}, nil, trusted, "2001:db8::7", ""},
		{"mapped peer", "[::ffff:10.1.1.1]:443", []string{"198.51.100.1"}, nil, trusted, "198.51.100.1", ""},
		{"mapped trusted prefix", "10.1.1.1:443", []string{"198.51.100.1, 10.2.2.2"}, nil, mapped, "198.51.100.1", ""},
		{"zone dropped", "[fe80::1%eth0]:443", nil, nil, trusted, "fe80::1", ""},
		{"bad remote", "not an address", []string{"198.51.100.1"}, nil, trusted, "invalid IP", ""},
		{"remote without port", "203.0.113.5", nil, nil, trusted, "203.0.113.5", ""},
		{"cdn header", "10.1.1.1:1234", []string{"6.6.6.6"}, nil, trusted, "198.51.100.7", "CF-Connecting-IP"},
		{"cdn header from untrusted peer", "203.0.113.5:1234", nil, nil, trusted, "203.0.113.5", "CF-Connecting-IP"},
		{"cdn header absent", "10.1.1.1:1234", []string{"6.6.6.6"}, nil, trusted, "10.1.1.1", "cf-connecting-ip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest("POST", "/beacon", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			for _, v := range tc.fwd {
				r.Header.Add("Forwarded", v)
			}
			if tc.name == "cdn header" || tc.name == "cdn header from untrusted peer" {
				r.Header.Set("CF-Connecting-IP", "198.51.100.7")
			}
			c := &Clients{TrustedProxies: tc.trusted, Header: tc.header}
			if got := c.IP(r).String(); got != tc.want {
				t.Errorf("ClientIP = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestClientsValidate(t *testing.T) {
	for _, tc := range []struct {
		header string
		ok     bool
	}{{"", true}, {"X-Forwarded-For", true}, {"CF-Connecting-IP", true}, {"Bad Header", false}, {"a:b", false}} {
		if err := (&Clients{Header: tc.header}).Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%q) = %v, want ok %v", tc.header, err, tc.ok)
		}
	}
}

func TestLocal(t *testing.T) {
	for _, tc := range []struct {
		name, remote, host string
		header             [2]string
		extra              string
		want               bool
	}{
		{"loopback", "127.0.0.1:5000", "localhost:8443", [2]string{}, "", true},
		{"loopback v6", "[::1]:5000", "[::1]:8443", [2]string{}, "", true},
		{"loopback ip host", "127.0.0.1:5000", "127.0.0.1:8443", [2]string{}, "", true},
		{"remote peer", "203.0.113.5:5000", "localhost:8443", [2]string{}, "", false},
		{"rebinding host", "127.0.0.1:5000", "attacker.example:8443", [2]string{}, "", false},
		{"proxied xff", "127.0.0.1:5000", "localhost:8443", [2]string{"X-Forwarded-For", "203.0.113.5"}, "", false},
		{"proxied forwarded", "127.0.0.1:5000", "localhost", [2]string{"Forwarded", "for=203.0.113.5"}, "", false},
		{"proxied via", "127.0.0.1:5000", "localhost", [2]string{"Via", "1.1 nginx"}, "", false},
		{"configured header", "127.0.0.1:5000", "localhost", [2]string{"X-My-Client", "203.0.113.5"}, "X-My-Client", false},
		{"empty forwarding header still counts", "127.0.0.1:5000", "localhost", [2]string{"X-Real-IP", ""}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/report", nil)
			r.RemoteAddr, r.Host = tc.remote, tc.host
			if tc.header[0] != "" {
				r.Header.Set(tc.header[0], tc.header[1])
			}
			if got := Local(r, tc.extra); got != tc.want {
				t.Errorf("Local = %v, want %v", got, tc.want)
			}
		})
	}
	for addr, want := range map[string]bool{
		"localhost:8443": true, "127.0.0.1:0": true, "[::1]:8443": true,
		":8443": false, "0.0.0.0:8443": false, "192.0.2.1:8443": false, "bad": false,
	} {
		if got := LoopbackListener(addr); got != want {
			t.Errorf("LoopbackListener(%q) = %v, want %v", addr, got, want)
		}
	}
}

// Open mode is refused for any listener off loopback and for any trusted
// proxy, with the reason.
func TestCheckOpen(t *testing.T) {
	lo := []string{"localhost:8443", "127.0.0.1:8444", "[::1]:0"}
	for _, tc := range []struct {
		name      string
		listeners []string
		trusted   []netip.Prefix
		want      string // "" for nil
	}{
		{"loopback", lo, nil, ""},
		{"every address", []string{"localhost:8443", ":8444"}, nil, `listener ":8444" is not bound to loopback`},
		{"public address", []string{"0.0.0.0:0", "localhost:0"}, nil, `listener "0.0.0.0:0"`},
		{"a name", []string{"rum.example:443"}, nil, `listener "rum.example:443"`},
		{"trusted proxy", lo, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, "proxies are trusted"},
	} {
		err := CheckOpen(tc.listeners, tc.trusted)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: CheckOpen = %v, want %q", tc.name, err, tc.want)
		}
	}
}
