package access

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, tc := range []struct {
		name    string
		remote  string
		xff     []string
		fwd     []string
		trusted []netip.Prefix
		want    string
	}{
		{"peer only", "203.0.113.5:1234", nil, nil, trusted, "203.0.113.5"},
		{"untrusted peer ignores xff", "203.0.113.5:1234", []string{"198.51.100.1"}, nil, trusted, "203.0.113.5"},
		{"untrusted peer ignores forwarded", "203.0.113.5:1234", nil, []string{"for=198.51.100.1"}, trusted, "203.0.113.5"},
		{"no trusted list", "10.1.1.1:1234", []string{"198.51.100.1"}, nil, nil, "10.1.1.1"},
		{"trusted peer xff", "10.1.1.1:1234", []string{"198.51.100.1"}, nil, trusted, "198.51.100.1"},
		{"rightmost untrusted", "10.1.1.1:1234", []string{"6.6.6.6, 198.51.100.1, 10.2.2.2"}, nil, trusted, "198.51.100.1"},
		{"spoofed left ignored", "10.1.1.1:1234", []string{"1.2.3.4", "198.51.100.1"}, nil, trusted, "198.51.100.1"},
		{"all trusted gives leftmost", "10.1.1.1:1234", []string{"10.3.3.3, 10.2.2.2"}, nil, trusted, "10.3.3.3"},
		{"malformed hop stops", "10.1.1.1:1234", []string{"198.51.100.1, garbage, 10.2.2.2"}, nil, trusted, "10.2.2.2"},
		{"malformed last hop gives peer", "10.1.1.1:1234", []string{"198.51.100.1, garbage"}, nil, trusted, "10.1.1.1"},
		{"empty xff gives peer", "10.1.1.1:1234", []string{""}, nil, trusted, "10.1.1.1"},
		{"xff with port", "10.1.1.1:1234", []string{"198.51.100.1:5555"}, nil, trusted, "198.51.100.1"},
		{"forwarded", "10.1.1.1:1234", nil, []string{`for=192.0.2.60;proto=http;by=203.0.113.43`}, trusted, "192.0.2.60"},
		{"forwarded ipv6 quoted", "10.1.1.1:1234", nil, []string{`for="[2001:db8:cafe::17]:4711"`}, trusted, "2001:db8:cafe::17"},
		{"forwarded chain", "10.1.1.1:1234", nil, []string{`for=6.6.6.6, for=198.51.100.9`, `for=10.9.9.9`}, trusted, "198.51.100.9"},
		{"forwarded wins over xff", "10.1.1.1:1234", []string{"6.6.6.6"}, []string{"for=198.51.100.9"}, trusted, "198.51.100.9"},
		{"forwarded unknown", "10.1.1.1:1234", nil, []string{"for=198.51.100.9, for=unknown"}, trusted, "10.1.1.1"},
		{"forwarded obfuscated", "10.1.1.1:1234", nil, []string{"for=_hidden"}, trusted, "10.1.1.1"},
		{"forwarded without for", "10.1.1.1:1234", nil, []string{"proto=https"}, trusted, "10.1.1.1"},
		{"ipv6 peer", "[2001:db8::1]:443", nil, nil, trusted, "2001:db8::1"},
		{"ipv6 trusted peer", "[fd00::1]:443", []string{"2001:db8::7"}, nil, trusted, "2001:db8::7"},
		{"mapped peer", "[::ffff:10.1.1.1]:443", []string{"198.51.100.1"}, nil, trusted, "198.51.100.1"},
		{"zone dropped", "[fe80::1%eth0]:443", nil, nil, trusted, "fe80::1"},
		{"bad remote", "not an address", []string{"198.51.100.1"}, nil, trusted, "invalid IP"},
		{"remote without port", "203.0.113.5", nil, nil, trusted, "203.0.113.5"},
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
			if got := ClientIP(r, tc.trusted).String(); got != tc.want {
				t.Errorf("ClientIP = %s, want %s", got, tc.want)
			}
		})
	}
}
