package origin

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestUDPBuffersOnEverySocket checks that each of the H3 origin's UDP
// sockets (127.0.0.1 and ::1 for localhost, 127.0.0.1 alone on a host
// without IPv6) gets the buffers QUIC needs, not only the first. As root,
// SO_RCVBUFFORCE and SO_SNDBUFFORCE grant them whatever
// net.core.[rw]mem_max says; otherwise each socket must get what those
// limits allow (the kernel reports twice the size granted).
func TestUDPBuffersOnEverySocket(t *testing.T) {
	ts := startServer(t, &Server{})
	socks := ts.h3Socks.udp
	if len(socks) == 0 {
		t.Fatal("the H3 origin has no UDP socket")
	}
	wantRcv, wantSnd := quicBufferSize, quicBufferSize
	if os.Geteuid() != 0 {
		wantRcv = min(wantRcv, 2*sysctlInt(t, "/proc/sys/net/core/rmem_max"))
		wantSnd = min(wantSnd, 2*sysctlInt(t, "/proc/sys/net/core/wmem_max"))
	}
	for _, c := range socks {
		rcv, snd, err := udpBufferSizes(c)
		if err != nil {
			t.Fatal(err)
		}
		if rcv < wantRcv || snd < wantSnd {
			t.Errorf("UDP socket %s: receive %d, send %d bytes, want at least %d and %d", c.LocalAddr(), rcv, snd, wantRcv, wantSnd)
		}
	}
}

func sysctlInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}
