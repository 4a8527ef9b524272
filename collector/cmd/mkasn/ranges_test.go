package main

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func prefixesOf(t *testing.T, start, end netip.Addr) []netip.Prefix {
	t.Helper()
	var ps []netip.Prefix
	if err := rangePrefixes(start, end, func(p netip.Prefix) error { ps = append(ps, p); return nil }); err != nil {
		t.Fatalf("%s-%s: %v", start, end, err)
	}
	return ps
}

func TestRangePrefixes(t *testing.T) {
	for _, tc := range []struct {
		start, end string
		want       string // space-separated
	}{
		{"1.0.0.0", "1.0.0.255", "1.0.0.0/24"},
		{"1.0.0.7", "1.0.0.7", "1.0.0.7/32"},
		{"1.0.0.1", "1.0.0.6", "1.0.0.1/32 1.0.0.2/31 1.0.0.4/31 1.0.0.6/32"},
		{"1.0.4.1", "1.0.7.254", "1.0.4.1/32 1.0.4.2/31 1.0.4.4/30 1.0.4.8/29 1.0.4.16/28 1.0.4.32/27 1.0.4.64/26 1.0.4.128/25 " +
			"1.0.5.0/24 1.0.6.0/24 1.0.7.0/25 1.0.7.128/26 1.0.7.192/27 1.0.7.224/28 1.0.7.240/29 1.0.7.248/30 1.0.7.252/31 1.0.7.254/32"},
		{"0.0.0.0", "255.255.255.255", "0.0.0.0/0"},
		{"255.255.255.255", "255.255.255.255", "255.255.255.255/32"},
		{"0.0.0.0", "255.255.255.254", strings.TrimSpace(func() string {
			var b strings.Builder
			for i := 1; i <= 32; i++ {
				b.WriteString(netip.PrefixFrom(netip.AddrFrom4(ones(32).xor(ones(33-i)).v4()), i).String() + " ")
			}
			return b.String()
		}())},
		{"2001:200::", "2001:200:1b9:ffff:ffff:ffff:ffff:ffff", "2001:200::/40 2001:200:100::/41 2001:200:180::/43 2001:200:1a0::/44 2001:200:1b0::/45 2001:200:1b8::/47"},
		{"::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::/0"},
		{"::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""}, // checked by the invariants only
		{"8000::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", ""},
		{"::ffff:1.0.0.0", "::ffff:1.0.0.255", "::ffff:1.0.0.0/120"},
	} {
		start, end := netip.MustParseAddr(tc.start), netip.MustParseAddr(tc.end)
		ps := prefixesOf(t, start, end)
		checkCover(t, start, end, ps)
		if tc.want == "" {
			continue
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.String())
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%s-%s:\n got %s\nwant %s", tc.start, tc.end, g, tc.want)
		}
	}
}

func TestRangePrefixesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		for _, is4 := range []bool{true, false} {
			a, b := randAddr(r, is4), randAddr(r, is4)
			if b.Less(a) {
				a, b = b, a
			}
			checkCover(t, a, b, prefixesOf(t, a, b))
		}
	}
}

// randAddr returns an address whose low bits are often all zeros or all ones,
// the boundaries where range splitting goes wrong.
func randAddr(r *rand.Rand, is4 bool) netip.Addr {
	u := u128{r.Uint64(), r.Uint64()}
	width := 128
	if is4 {
		u, width = u128{lo: u.lo & (1<<32 - 1)}, 32
	}
	switch n := r.IntN(width + 1); r.IntN(3) {
	case 0:
		u = u.or(ones(n))
	case 1:
		u = u.and(ones(width).xor(ones(n)))
	}
	return u.addr(is4)
}

func (u u128) and(v u128) u128 { return u128{u.hi & v.hi, u.lo & v.lo} }
func (u u128) xor(v u128) u128 { return u128{u.hi ^ v.hi, u.lo ^ v.lo} }
func (u u128) v4() [4]byte     { return u.addr(true).As4() }

// checkCover checks that ps are canonical, in order, adjacent, cover exactly
// start–end, and are the fewest possible: no two neighbours are the halves
// of one larger prefix.
func checkCover(t *testing.T, start, end netip.Addr, ps []netip.Prefix) {
	t.Helper()
	if len(ps) == 0 {
		t.Fatalf("%s-%s: no prefixes", start, end)
	}
	next := start
	for i, p := range ps {
		if p != p.Masked() {
			t.Fatalf("%s-%s: %s is not canonical", start, end, p)
		}
		if p.Addr() != next {
			t.Fatalf("%s-%s: %s starts at %s, want %s", start, end, p, p.Addr(), next)
		}
		last := toU128(p.Addr()).or(ones(p.Addr().BitLen() - p.Bits())).addr(p.Addr().Is4())
		if i == len(ps)-1 {
			if last != end {
				t.Fatalf("%s-%s: ends at %s", start, end, last)
			}
		} else {
			next = last.Next()
		}
		if i > 0 {
			q := ps[i-1]
			if q.Bits() == p.Bits() && p.Bits() > 0 && netip.PrefixFrom(q.Addr(), q.Bits()-1).Masked().Addr() == q.Addr() {
				t.Fatalf("%s-%s: %s and %s make one prefix", start, end, q, p)
			}
		}
	}
	if !slices.IsSortedFunc(ps, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) }) {
		t.Fatalf("%s-%s: not in order", start, end)
	}
}
