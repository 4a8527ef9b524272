package origin

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Accepted connections get TCP_USER_TIMEOUT, counted or not.
func TestLimitListenerUserTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
	}{{"counted", 10}, {"not capped", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := &limitListener{Listener: inner, lim: newConnLimiter(tc.max, -1, nil), userTimeout: 1500 * time.Millisecond}
			defer ln.Close()
			c, err := net.Dial("tcp", inner.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			sc, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			var tcp *net.TCPConn
			switch c := sc.(type) {
			case *limitedConn:
				tcp = c.TCPConn
			case *net.TCPConn:
				tcp = c
			}
			raw, err := tcp.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var ms int
			var gerr error
			raw.Control(func(fd uintptr) { ms, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT) })
			if gerr != nil || ms != 1500 {
				t.Errorf("TCP_USER_TIMEOUT %d ms (%v), want 1500", ms, gerr)
			}
		})
	}
}
