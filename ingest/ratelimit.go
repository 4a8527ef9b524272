package ingest

import (
	"math"
	"net/netip"
	"sync"
	"time"
)

// rateLimiter is a token bucket per client: an IPv4 address, or the /64 an
// IPv6 address belongs to (one subscriber's usual allocation, so a client
// cannot dodge the limit by rotating addresses inside it). The table holds at
// most max clients; when full, idle (refilled) buckets are evicted first,
// then arbitrary ones — a forgotten client only gets a fresh burst.
type rateLimiter struct {
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

func newRateLimiter(rate float64, burst, maxClients int) *rateLimiter {
	if burst < 1 {
		burst = max(1, int(math.Ceil(rate)))
	}
	if maxClients <= 0 {
		maxClients = 100_000
	}
	return &rateLimiter{rate: rate, burst: float64(burst), max: maxClients, buckets: make(map[netip.Addr]*bucket)}
}

func limitKey(ip netip.Addr) netip.Addr {
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}

// allow takes a token for ip at now, or says how long until one is there.
func (l *rateLimiter) allow(ip netip.Addr, now time.Time) (bool, time.Duration) {
	key := limitKey(ip)
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= l.max {
			l.evict(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(l.burst, b.tokens+el*l.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	return false, wait
}

// evict makes room: drop buckets that have refilled (their clients are
// idle and would start from a full bucket anyway), then, if that freed
// nothing, an eighth of the table.
func (l *rateLimiter) evict(now time.Time) {
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

func (l *rateLimiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
