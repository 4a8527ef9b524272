package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// roleEnv runs TestListenerCheckFileCapabilities as one of its processes.
const roleEnv = "STORE_TEST_LISTENER_ROLE"

// A server started by a user who is not root from a file with
// capabilities (ClickHouse's official packages) keeps its open files from
// that user; its socket is then trusted by its owner alone, with one
// warning, rather than never. Run as root: the "serve" process runs as uid
// 65534 and starts a listener from a copy of this binary with
// cap_net_bind_service.
func TestListenerCheckFileCapabilities(t *testing.T) {
	switch os.Getenv(roleEnv) {
	case "server":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			os.Exit(1)
		}
		fmt.Println("listening", ln.Addr())
		time.Sleep(time.Minute)
		os.Exit(0)
	case "serve":
		os.Exit(fileCapsServe())
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to set file capabilities and run as another user")
	}
	setcap, err := exec.LookPath("setcap")
	if err != nil {
		t.Skip("no setcap")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "h3rum-filecaps-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"serve", "server"} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(setcap, "cap_net_bind_service+ep", filepath.Join(dir, "server")).CombinedOutput(); err != nil {
		t.Skipf("setcap: %v %s", err, out)
	}
	cmd := exec.Command(filepath.Join(dir, "serve"), "-test.run=^TestListenerCheckFileCapabilities$")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), roleEnv+"=serve", "STORE_TEST_SERVER="+filepath.Join(dir, "server"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	t.Logf("%s", out)
}

// fileCapsServe is the "serve" side of TestListenerCheckFileCapabilities.
func fileCapsServe() int {
	srv := exec.Command(os.Getenv("STORE_TEST_SERVER"), "-test.run=^TestListenerCheckFileCapabilities$")
	srv.Env = append(os.Environ(), roleEnv+"=server")
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		fmt.Println("starting the server:", err)
		return 1
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	var addr string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
			addr = a
			break
		}
	}
	if _, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", srv.Process.Pid)); !errors.Is(err, fs.ErrPermission) {
		fmt.Println("the server's open files are readable; the case is not tested:", err)
		return 1
	}
	var logs bytes.Buffer
	c := &listenerCheck{log: slog.New(slog.NewTextHandler(&logs, nil)), pid: func() (int, error) { return srv.Process.Pid, nil }}
	for range 2 {
		conn, err := c.dial(context.Background(), addr)
		if err != nil {
			fmt.Println("dial:", err)
			return 1
		}
		conn.Close()
	}
	if n := strings.Count(logs.String(), "trusting its listening socket by its owner"); n != 1 || c.refused.Load() != 0 {
		fmt.Printf("%d warnings, %d refusals:\n%s", n, c.refused.Load(), logs.String())
		return 1
	}
	fmt.Print(logs.String())
	return 0
}
