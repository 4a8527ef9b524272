package access

import (
	"fmt"
	"net/netip"
	"strings"
)

// Prefixes is a comma-separated list of CIDR prefixes or addresses, as a
// flag.Value (a bare address is its own /32 or /128): the trusted
// proxies of Clients.TrustedProxies.
type Prefixes []netip.Prefix

func (p *Prefixes) String() string {
	s := make([]string, len(*p))
	for i, x := range *p {
		s[i] = x.String()
	}
	return strings.Join(s, ",")
}

func (p *Prefixes) Set(v string) error {
	*p = nil
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return fmt.Errorf("%q is neither an address nor a CIDR prefix", s)
			}
			*p = append(*p, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		x, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("%q is not a CIDR prefix", s)
		}
		*p = append(*p, x.Masked())
	}
	return nil
}
