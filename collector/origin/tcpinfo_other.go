//go:build !linux

package origin

import (
	"syscall"
	"time"
)

// tcpInfo knows nothing outside Linux: the Server-Timing entries are
// omitted.
type tcpInfo struct{}

func newTCPInfo(syscall.RawConn) *tcpInfo { return &tcpInfo{} }

func (*tcpInfo) stats(time.Time) connStats { return connStats{} }
