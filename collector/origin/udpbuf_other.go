//go:build !linux

package origin

import (
	"errors"
	"net"
)

func udpBufferSizes(*net.UDPConn) (rcv, snd int, err error) {
	return 0, 0, errors.New("not implemented outside Linux")
}

func forceUDPBuffers(*net.UDPConn, int) {}
