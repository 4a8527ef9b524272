package access

import (
	"fmt"
	"net/netip"
	"strings"
)

// Prefixes is a comma-separated list of CIDR prefixes or addresses, as a
// flag.Value (a bare address is its own /32 or /128): the one list of
// trusted proxies that Clients and the origin's connection caps share.
// Set normalises each prefix as Normalize does.
type Prefixes []netip.Prefix

// Normalize returns p masked, an IPv4-mapped IPv6 prefix as the IPv4
// prefix it covers (::ffff:10.0.0.0/104 as 10.0.0.0/8). Addresses are
// compared unmapped, so a mapped prefix as written would match nothing.
func Normalize(p netip.Prefix) netip.Prefix {
	return unmapped(p).Masked()
}

func unmapped(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// Contains reports whether a, unmapped and without its zone, is in one of
// p. A list built in code rather than by Set matches as if normalised
// (netip's Contains ignores the host bits; mapped prefixes are unmapped).
func (p Prefixes) Contains(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, x := range p {
		if unmapped(x).Contains(a) {
			return true
		}
	}
	return false
}

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
			*p = append(*p, Normalize(netip.PrefixFrom(a, a.BitLen())))
			continue
		}
		x, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("%q is not a CIDR prefix", s)
		}
		*p = append(*p, Normalize(x))
	}
	return nil
}
