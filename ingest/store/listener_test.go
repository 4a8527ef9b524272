package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// procAddr writes addresses as /proc/net/tcp and tcp6 do.
func TestProcAddr(t *testing.T) {
	if !littleEndian() {
		t.Skip("the expected strings are a little-endian machine's")
	}
	for _, tc := range []struct{ ap, want string }{
		{"127.0.0.1:9000", "0100007F:2328"},
		{"10.1.2.3:443", "0302010A:01BB"},
		{"[::1]:8443", "00000000000000000000000001000000:20FB"},
		{"[2001:db8::5]:1", "B80D0120000000000000000005000000:0001"},
	} {
		if got := procAddr(netip.MustParseAddrPort(tc.ap)); got != tc.want {
			t.Errorf("procAddr(%s) = %s, want %s", tc.ap, got, tc.want)
		}
	}
}

func littleEndian() bool {
	return procAddr(netip.MustParseAddrPort("1.0.0.0:0"))[:2] == "00"
}

// The check finds the listening socket of the exact address, IPv4 and
// IPv6, and accepts it only from the process that holds it; a refusal is
// counted every time and logged once per episode, and its end is logged.
func TestListenerCheck(t *testing.T) {
	// Not in this process's group: holds accepts the server's group.
	other := exec.Command("sleep", "60")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	for _, network := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", network)
		if err != nil {
			t.Logf("%s: %v", network, err)
			continue
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		ap := netip.MustParseAddrPort(ln.Addr().String())
		inode, uid, err := listeningSocket(ap)
		if err != nil || inode == 0 || uid != os.Geteuid() {
			t.Fatalf("%s: listeningSocket = %d, %d, %v; want its inode and uid %d", ap, inode, uid, err, os.Geteuid())
		}
		if err := holds(os.Getpid(), inode); err != nil {
			t.Errorf("%s: holds(this process) = %v", ap, err)
		}
		if err := holds(other.Process.Pid, inode); err == nil || !strings.Contains(err.Error(), "is not held by local ClickHouse") {
			t.Errorf("%s: holds(another process) = %v", ap, err)
		}

		var logs bytes.Buffer
		pid := other.Process.Pid
		c := &listenerCheck{log: slog.New(slog.NewTextHandler(&logs, nil)), pid: func() (int, error) { return pid, nil }}
		for range 3 {
			if conn, err := c.dial(context.Background(), ap.String()); !errors.Is(err, ErrForeignListener) {
				if conn != nil {
					conn.Close()
				}
				t.Errorf("%s: dial to a socket another process holds: %v, want ErrForeignListener", ap, err)
			}
		}
		pid = os.Getpid()
		conn, err := c.dial(context.Background(), ap.String())
		if err != nil {
			t.Fatalf("%s: dial to the process's own socket: %v", ap, err)
		}
		conn.Close()
		if c.refused.Load() != 3 || strings.Count(logs.String(), "refusing to connect") != 1 || strings.Count(logs.String(), "listens on its address again") != 1 {
			t.Errorf("%s: %d refused, logs:\n%s\nwant 3 refusals, one line for the episode and one for its end", ap, c.refused.Load(), logs.String())
		}
		ln.Close()
		if _, _, err := listeningSocket(ap); !errors.Is(err, errNotListening) {
			t.Errorf("%s closed: listeningSocket = %v, want errNotListening", ap, err)
		}
		before := c.refused.Load()
		if _, err := c.dial(context.Background(), ap.String()); err == nil || errors.Is(err, ErrForeignListener) || c.refused.Load() != before {
			t.Errorf("%s closed: dial = %v; want an ordinary failure, not counted as a refusal", ap, err)
		}
	}
}
