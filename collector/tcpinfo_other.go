//go:build !linux

package collector

import "syscall"

// tcpStats knows nothing outside Linux: the Server-Timing entries are
// omitted.
func tcpStats(syscall.RawConn) connStats { return connStats{} }
