package access

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestLimiterEviction(t *testing.T) {
	l := NewLimiter(1, 1, 4)
	now := time.Unix(1000, 0)
	for i := range 4 {
		l.Allow(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), now)
	}
	if ok, _ := l.Allow(netip.MustParseAddr("192.0.2.0"), now); ok {
		t.Error("second report within the second allowed")
	}
	l.Allow(netip.MustParseAddr("192.0.2.200"), now)
	if n := l.Len(); n > 4 {
		t.Errorf("table grew to %d, bound 4", n)
	}
	// IPv6 clients share a bucket per /64.
	if ok, _ := l.Allow(netip.MustParseAddr("2001:db8:1:2::1"), now); !ok {
		t.Error("first IPv6 report refused")
	}
	if ok, wait := l.Allow(netip.MustParseAddr("2001:db8:1:2::ffff"), now); ok || wait <= 0 {
		t.Errorf("same /64 not limited (ok=%v wait=%v)", ok, wait)
	}
	if ok, _ := l.Allow(netip.MustParseAddr("2001:db8:1:2::1"), now.Add(1100*time.Millisecond)); !ok {
		t.Error("bucket did not refill")
	}
}

func TestLimiterCheckDoesNotTake(t *testing.T) {
	l := NewLimiter(1, 2, 0)
	ip, now := netip.MustParseAddr("198.51.100.1"), time.Unix(1000, 0)
	for range 5 {
		if ok, _ := l.Check(ip, now); !ok {
			t.Fatal("Check refused a fresh client")
		}
	}
	if l.Len() != 0 {
		t.Errorf("Check added %d clients to the table", l.Len())
	}
	l.Allow(ip, now)
	l.Allow(ip, now)
	if ok, wait := l.Check(ip, now); ok || wait != time.Second {
		t.Errorf("after the burst: Check = %v, %v; want false, 1s", ok, wait)
	}
}

func TestFailures(t *testing.T) {
	f := NewFailures()
	ip, other, now := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2"), time.Unix(1000, 0)
	for i := range FailureBurst {
		if blocked, _ := f.Blocked(ip, now); blocked {
			t.Fatalf("blocked after %d failures, burst %d", i, FailureBurst)
		}
		f.Failed(ip, now)
	}
	if blocked, wait := f.Blocked(ip, now); !blocked || wait != FailureEvery {
		t.Errorf("after %d failures: blocked %v, wait %v; want true, %v", FailureBurst, blocked, wait, FailureEvery)
	}
	_, lockout := f.Blocked(ip, now)
	if got := LockedOut(lockout); !strings.Contains(got, "locked out after 10 wrong tokens, the right token included") ||
		!strings.Contains(got, "try again in 6 s") || strings.Contains(got, "\n") {
		t.Errorf("LockedOut = %q; want the lock-out, its cause and its length on one line", got)
	}
	if blocked, _ := f.Blocked(other, now); blocked {
		t.Error("another address is blocked too")
	}
	if blocked, _ := f.Blocked(ip, now.Add(FailureEvery)); blocked {
		t.Error("still blocked after one interval")
	}
	for _, tc := range []struct {
		wait time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {FailureEvery, 6}} {
		if got := RetryAfter(tc.wait); got != tc.want {
			t.Errorf("RetryAfter(%v) = %d, want %d", tc.wait, got, tc.want)
		}
	}
	var none *Failures
	none.Failed(ip, now)
	if blocked, _ := none.Blocked(ip, now); blocked {
		t.Error("nil Failures blocked")
	}
}
