package origin

import (
	"net"

	"golang.org/x/sys/unix"
)

// udpBufferSizes returns a UDP socket's receive and send buffer sizes as
// the kernel reports them (twice what was granted, as quic-go also counts).
func udpBufferSizes(c *net.UDPConn) (rcv, snd int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var rerr, serr error
	if err := raw.Control(func(fd uintptr) {
		rcv, rerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		snd, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	}); err != nil {
		return 0, 0, err
	}
	if rerr != nil {
		return 0, 0, rerr
	}
	return rcv, snd, serr
}

// forceUDPBuffers tries SO_RCVBUFFORCE and SO_SNDBUFFORCE, which exceed
// net.core.[rw]mem_max for a process with CAP_NET_ADMIN (as quic-go does).
func forceUDPBuffers(c *net.UDPConn, size int) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size)
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, size)
	})
}
