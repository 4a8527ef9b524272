//go:build !linux

package origin

import (
	"net"
	"syscall"
	"time"
)

// tcpInfo knows nothing outside Linux: the Server-Timing entries are
// omitted.
type tcpInfo struct{}

func newTCPInfo(syscall.RawConn) *tcpInfo { return &tcpInfo{} }

func (*tcpInfo) stats(time.Time) connStats { return connStats{} }

// setUserTimeout does nothing outside Linux; the per-request write
// deadlines still apply.
func setUserTimeout(*net.TCPConn, time.Duration) {}
