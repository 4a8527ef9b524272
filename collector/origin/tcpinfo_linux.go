package origin

import (
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tcpInfo reads the kernel's view of one TCP connection (TCP_INFO). It is
// made once per connection so that a read allocates nothing: the callback
// handed to RawConn.Control is bound once, and the kernel writes into the
// struct kept here. The mutex serialises concurrent HTTP/2 streams of the
// connection.
//
// A reading is reused for tcpInfoMaxAge: the getsockopt system call costs
// about a microsecond, a few percent of a whole request, while the smoothed
// RTT only moves when an ACK arrives, so the parallel requests of one
// browser batch would read the same numbers anyway.
type tcpInfo struct {
	raw  syscall.RawConn
	read func(fd uintptr)

	mu   sync.Mutex
	at   time.Time // of the last successful reading
	last connStats
	info unix.TCPInfo
	err  syscall.Errno
}

const tcpInfoMaxAge = time.Millisecond

func newTCPInfo(raw syscall.RawConn) *tcpInfo {
	ti := &tcpInfo{raw: raw}
	ti.read = ti.getsockopt
	return ti
}

func (ti *tcpInfo) getsockopt(fd uintptr) {
	n := uint32(unix.SizeofTCPInfo)
	ti.info = unix.TCPInfo{}
	// TCP_INFO never blocks, so the raw call is safe and skips the
	// scheduler's system-call bookkeeping.
	_, _, ti.err = unix.RawSyscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_TCP, unix.TCP_INFO,
		uintptr(unsafe.Pointer(&ti.info)), uintptr(unsafe.Pointer(&n)), 0)
}

// stats returns smoothed RTT, its variation and minimum (the kernel keeps
// them in microseconds) and the total number of retransmitted segments.
func (ti *tcpInfo) stats(now time.Time) connStats {
	ti.mu.Lock()
	if !ti.at.IsZero() && now.Sub(ti.at) < tcpInfoMaxAge {
		st := ti.last
		ti.mu.Unlock()
		return st
	}
	st, ok := ti.readLocked(now)
	ti.mu.Unlock()
	if !ok {
		return connStats{}
	}
	return st
}

//go:noinline
func (ti *tcpInfo) readLocked(now time.Time) (connStats, bool) {
	if err := ti.raw.Control(ti.read); err != nil || ti.err != 0 {
		return connStats{}, false
	}
	info := &ti.info
	st := connStats{
		rtt:       time.Duration(info.Rtt) * time.Microsecond,
		lost:      uint64(info.Total_retrans),
		lostKnown: true,
	}
	if info.Min_rtt != ^uint32(0) { // ~0 until the first sample
		st.minRTT = time.Duration(info.Min_rtt) * time.Microsecond
	}
	if info.Rtt > 0 {
		st.rttVar = time.Duration(info.Rttvar) * time.Microsecond
	}
	ti.at, ti.last = now, st
	return st, true
}

// setUserTimeout sets TCP_USER_TIMEOUT: the kernel closes the connection
// when data it sent stays unacknowledged, or cannot be sent because the
// client's window stays closed, for d. That bounds a client that stops
// reading without a deadline on every request.
func setUserTimeout(c *net.TCPConn, d time.Duration) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d/time.Millisecond))
	})
}
