package access

import (
	"testing"
)

func TestPrefixesSet(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"10.0.0.0/8, 192.0.2.7", "10.0.0.0/8,192.0.2.7/32", false},
		{"2001:db8::1,2001:db8:1::/48", "2001:db8::1/128,2001:db8:1::/48", false},
		{"10.1.2.3/8", "10.0.0.0/8", false}, // masked
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
