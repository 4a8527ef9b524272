package access

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"time"
)

// Limiter is a token bucket per client: an IPv4 address, or the /64 an IPv6
// address belongs to (one subscriber's usual allocation, so a client cannot
// dodge the limit by rotating addresses inside it). The table holds at most
// a bounded number of clients; when full, idle (refilled) buckets are
// evicted first, then arbitrary ones — a forgotten client only gets a fresh
// burst. It is safe for concurrent use.
type Limiter struct {
	rate  float64 // tokens per second
	burst float64
	max   int

	mu      sync.Mutex
	buckets map[netip.Addr]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// NewLimiter returns a limiter of rate tokens per second per client, with
// bursts of burst (at least 1; 0 means rate rounded up) and a table of at
// most maxClients (0 means 100 000). rate must be positive.
func NewLimiter(rate float64, burst, maxClients int) *Limiter {
	if burst < 1 {
		burst = max(1, int(math.Ceil(rate)))
	}
	if maxClients <= 0 {
		maxClients = 100_000
	}
	return &Limiter{rate: rate, burst: float64(burst), max: maxClients, buckets: make(map[netip.Addr]*bucket)}
}

// Key is the bucket a client address counts against: the address itself,
// or its /64 for IPv6.
func Key(ip netip.Addr) netip.Addr {
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}

// Allow takes a token for ip at now, or says how long until one is there.
func (l *Limiter) Allow(ip netip.Addr, now time.Time) (bool, time.Duration) {
	return l.take(ip, now, true)
}

// Check says whether ip has a token at now without taking it, or how long
// until it has one.
func (l *Limiter) Check(ip netip.Addr, now time.Time) (bool, time.Duration) {
	return l.take(ip, now, false)
}

func (l *Limiter) take(ip netip.Addr, now time.Time, consume bool) (bool, time.Duration) {
	key := Key(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if !consume {
			return true, 0
		}
		if len(l.buckets) >= l.max {
			l.evict(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(l.burst, b.tokens+el*l.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		if consume {
			b.tokens--
		}
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// evict makes room: drop buckets that have refilled (their clients are
// idle and would start from a full bucket anyway), then, if that freed
// nothing, an eighth of the table.
func (l *Limiter) evict(now time.Time) {
	full := time.Duration(l.burst / l.rate * float64(time.Second))
	for k, b := range l.buckets {
		if now.Sub(b.last) >= full {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) < l.max {
		return
	}
	n := max(1, l.max/8)
	for k := range l.buckets {
		if n == 0 {
			break
		}
		delete(l.buckets, k)
		n--
	}
}

// Len is the number of clients in the table.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// Failures throttles wrong credentials per client address: a few attempts
// at once, then one every few seconds, so a token cannot be guessed by
// brute force. A nil *Failures throttles nothing.
type Failures struct {
	l *Limiter
}

// Defaults of NewFailures: FailureBurst wrong attempts at once, then one
// per FailureEvery.
const (
	FailureBurst = 10
	FailureEvery = 6 * time.Second
)

// NewFailures returns the throttle h3rum uses for every token it checks.
func NewFailures() *Failures {
	return &Failures{l: NewLimiter(float64(time.Second)/float64(FailureEvery), FailureBurst, 0)}
}

// Blocked reports whether ip has used up its wrong attempts, and how long
// until it may try again.
func (f *Failures) Blocked(ip netip.Addr, now time.Time) (bool, time.Duration) {
	if f == nil {
		return false, 0
	}
	ok, wait := f.l.Check(ip, now)
	return !ok, wait
}

// RetryAfter is wait as a Retry-After value: whole seconds, at least 1.
func RetryAfter(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}

// LockedOut is the one-line reason to give a client that Blocked refuses:
// the address is refused, not the token, so the right token is refused
// too until it has waited. Without saying so, an operator locked out by a
// misconfigured script would think the right token wrong.
func LockedOut(wait time.Duration) string {
	return fmt.Sprintf("this address is locked out after %d wrong tokens, the right token included: try again in %d s (Retry-After), then at most once every %d s until it stops sending wrong ones",
		FailureBurst, RetryAfter(wait), int(FailureEvery/time.Second))
}

// Failed records a wrong attempt from ip.
func (f *Failures) Failed(ip netip.Addr, now time.Time) {
	if f != nil {
		f.l.Allow(ip, now)
	}
}
