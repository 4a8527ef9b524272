package lab

import (
	"time"

	"golang.org/x/sys/unix"
)

// clock reads CLOCK_MONOTONIC, the clock timerfd deadlines are set on, in
// nanoseconds. unix.ClockGettime is a real system call; Go's own monotonic
// reading is the same clock through the vDSO, so the clock reads it and adds
// the offset measured once at start.
type clock struct {
	base   time.Time
	offset int64 // CLOCK_MONOTONIC at base
}

func newClock() clock {
	var best clock
	bestGap := int64(1 << 62)
	// Bracket time.Now between two system readings; keep the tightest of a few tries.
	for range 5 {
		var a, b unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
		now := time.Now()
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
		if gap := b.Nano() - a.Nano(); gap < bestGap {
			bestGap = gap
			best = clock{base: now, offset: a.Nano() + gap/2}
		}
	}
	return best
}

// now is CLOCK_MONOTONIC in nanoseconds.
func (c clock) now() int64 { return c.offset + int64(time.Since(c.base)) }
