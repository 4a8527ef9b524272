package collector

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// tcpStats reads the kernel's view of a TCP connection (TCP_INFO): smoothed
// RTT, its variation and minimum, in microseconds, and the total number of
// retransmitted segments.
func tcpStats(raw syscall.RawConn) connStats {
	var info *unix.TCPInfo
	var err error
	cerr := raw.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPInfo(int(fd), unix.SOL_TCP, unix.TCP_INFO)
	})
	if cerr != nil || err != nil {
		return connStats{}
	}
	st := connStats{
		rtt:       time.Duration(info.Rtt) * time.Microsecond,
		minRTT:    time.Duration(info.Min_rtt) * time.Microsecond,
		lost:      uint64(info.Total_retrans),
		lostKnown: true,
	}
	if info.Min_rtt == ^uint32(0) { // no sample yet
		st.minRTT = 0
	}
	if info.Rtt > 0 {
		st.rttVar = time.Duration(info.Rttvar) * time.Microsecond
	}
	return st
}
