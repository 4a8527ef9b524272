package origin

import "testing"

// TestUDPBuffersOnEverySocket checks that each of the H3 origin's UDP
// sockets (127.0.0.1 and ::1 for localhost, 127.0.0.1 alone on a host
// without IPv6) gets the buffers QUIC needs, not only the first: tests
// run as root, so SO_RCVBUFFORCE and SO_SNDBUFFORCE succeed whatever
// net.core.[rw]mem_max says.
func TestUDPBuffersOnEverySocket(t *testing.T) {
	ts := startServer(t, &Server{})
	socks := ts.h3Socks.udp
	if len(socks) == 0 {
		t.Fatal("the H3 origin has no UDP socket")
	}
	for _, c := range socks {
		rcv, snd, err := udpBufferSizes(c)
		if err != nil {
			t.Fatal(err)
		}
		if rcv < quicBufferSize || snd < quicBufferSize {
			t.Errorf("UDP socket %s: receive %d, send %d bytes, want at least %d each", c.LocalAddr(), rcv, snd, quicBufferSize)
		}
	}
}
