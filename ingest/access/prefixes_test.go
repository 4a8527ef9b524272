package access

import (
	"net/netip"
	"testing"
)

func TestPrefixesSet(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"10.0.0.0/8, 192.0.2.7", "10.0.0.0/8,192.0.2.7/32", false},
		{"2001:db8::1,2001:db8:1::/48", "2001:db8::1/128,2001:db8:1::/48", false},
		{"10.1.2.3/8", "10.0.0.0/8", false},                                         // masked
		{"::ffff:10.0.0.0/104, ::ffff:192.0.2.7", "10.0.0.0/8,192.0.2.7/32", false}, // unmapped, as peers are
		{" , ", "", false},
		{"proxy.example", "", true},
		{"10.0.0.0/33", "", true},
	} {
		var p Prefixes
		err := p.Set(tc.in)
		if (err != nil) != tc.err || (err == nil && p.String() != tc.want) {
			t.Errorf("Set(%q) = %q, %v; want %q (error %v)", tc.in, p.String(), err, tc.want, tc.err)
		}
	}
}

// Contains is the one rule by which the origin's connection caps and
// Clients trust a peer, whether the list came from Set or from code.
func TestPrefixesContains(t *testing.T) {
	p := Prefixes{
		netip.MustParsePrefix("::ffff:10.0.0.0/104"), // built in code, not normalised
		netip.MustParsePrefix("192.0.2.9/24"),        // host bits set
		netip.MustParsePrefix("2001:db8::/32"),
	}
	for addr, want := range map[string]bool{
		"10.1.2.3":            true,
		"::ffff:10.1.2.3":     true,
		"11.0.0.1":            false,
		"192.0.2.200":         true,
		"192.0.3.1":           false,
		"2001:db8::1%eth0":    true,
		"2001:db9::1":         false,
		"::ffff:198.51.100.1": false,
	} {
		if got := p.Contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Contains(%s) = %v, want %v", addr, got, want)
		}
	}
	if (Prefixes{}).Contains(netip.MustParseAddr("10.0.0.1")) {
		t.Error("an empty list trusts an address")
	}
}
