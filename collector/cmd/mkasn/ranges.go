package main

import (
	"fmt"
	"math/bits"
	"net/netip"
)

// rangePrefixes calls yield with the fewest CIDR prefixes that together
// cover exactly the addresses from start to end inclusive, in address order.
// A range is one prefix only when it is aligned on a power of two; in
// general it is several (1.0.0.1–1.0.0.6 is /32, /31, /31, /32).
func rangePrefixes(start, end netip.Addr, yield func(netip.Prefix) error) error {
	if !start.IsValid() || !end.IsValid() || start.Is4() != end.Is4() || start.Zone() != "" || end.Zone() != "" {
		return fmt.Errorf("range %s-%s: both ends must be IPv4 or both IPv6", start, end)
	}
	if end.Less(start) {
		return fmt.Errorf("range %s-%s: start is after end", start, end)
	}
	width := start.BitLen()
	lo, hi := toU128(start), toU128(end)
	for {
		// The largest block that starts at lo is limited by lo's alignment
		// and by how many addresses are left up to hi.
		host := min(lo.trailingZeros(), width)
		if n := hi.sub(lo).floorLog2PlusOne(); n < host {
			host = n
		}
		p := netip.PrefixFrom(lo.addr(start.Is4()), width-host)
		if err := yield(p); err != nil {
			return err
		}
		last := lo.or(ones(host))
		if last == hi {
			return nil
		}
		lo = last.add1()
	}
}

// u128 is an address as an unsigned 128-bit number; IPv4 addresses use the
// low 32 bits.
type u128 struct{ hi, lo uint64 }

func toU128(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u128{lo: uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])}
	}
	b := a.As16()
	var u u128
	for i := range 8 {
		u.hi = u.hi<<8 | uint64(b[i])
		u.lo = u.lo<<8 | uint64(b[8+i])
	}
	return u
}

func (u u128) addr(is4 bool) netip.Addr {
	if is4 {
		return netip.AddrFrom4([4]byte{byte(u.lo >> 24), byte(u.lo >> 16), byte(u.lo >> 8), byte(u.lo)})
	}
	var b [16]byte
	for i := range 8 {
		b[i] = byte(u.hi >> (56 - 8*i))
		b[8+i] = byte(u.lo >> (56 - 8*i))
	}
	return netip.AddrFrom16(b)
}

func (u u128) trailingZeros() int {
	if u.lo != 0 {
		return bits.TrailingZeros64(u.lo)
	}
	return 64 + bits.TrailingZeros64(u.hi) // 128 for zero
}

func (u u128) sub(v u128) u128 {
	lo, borrow := bits.Sub64(u.lo, v.lo, 0)
	hi, _ := bits.Sub64(u.hi, v.hi, borrow)
	return u128{hi, lo}
}

func (u u128) add1() u128 {
	lo, carry := bits.Add64(u.lo, 1, 0)
	return u128{u.hi + carry, lo}
}

func (u u128) or(v u128) u128 { return u128{u.hi | v.hi, u.lo | v.lo} }

// floorLog2PlusOne is ⌊log2(u+1)⌋: the host bits of the largest block of
// size 2^n that fits in u+1 addresses. It is 128 when u+1 overflows.
func (u u128) floorLog2PlusOne() int {
	v := u.add1()
	if v == (u128{}) {
		return 128
	}
	if v.hi != 0 {
		return 127 - bits.LeadingZeros64(v.hi)
	}
	return 63 - bits.LeadingZeros64(v.lo)
}

// ones is a number with the low n bits set.
func ones(n int) u128 {
	switch {
	case n >= 128:
		return u128{^uint64(0), ^uint64(0)}
	case n >= 64:
		return u128{hi: 1<<(n-64) - 1, lo: ^uint64(0)}
	}
	return u128{lo: 1<<n - 1}
}
