package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// The managed server's password crosses loopback in clear text, and its
// port is free while the server restarts: another local user who binds it
// first would receive the password. So h3rum connects to the managed
// server only after finding the socket that listens on the exact address
// it dials and checking that this user made it and the server's process
// holds it, on every connection of the pool, not only at start-up.

// ErrForeignListener marks a connection to the managed ClickHouse that was
// not made, its password not sent, because the socket listening on its
// address is not the server's own.
var ErrForeignListener = errors.New("the socket listening on the managed ClickHouse's address is not its own")

// errNotListening is an ordinary failure to connect: nothing listens on
// the address (the server is starting, or down).
var errNotListening = errors.New("nothing listens there")

// listenerCheck dials a managed server's address only while its own
// socket listens there. It counts refusals and logs the first of each
// episode (the pool may redial many times a second), and the end of it.
type listenerCheck struct {
	// pid is the server's process; an error when it is not running.
	pid func() (int, error)
	log *slog.Logger

	refused  atomic.Int64
	refusing atomic.Bool
	byOwner  atomic.Bool // warned that the server's open files cannot be read
}

// dial is a clickhouse-go Options.DialContext.
func (c *listenerCheck) dial(ctx context.Context, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to local ClickHouse: address %q: %w", addr, err)
	}
	inode, err := c.check(ap)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	// The listener may have changed hands between the check and the
	// connect. The same socket still listening means it did not: while it
	// is bound to the address, no other user can bind it.
	if again, err := c.check(ap); err != nil || again != inode {
		conn.Close()
		if err == nil {
			err = c.refuse(ap, fmt.Errorf("the socket listening on %s changed while connecting", ap))
		}
		return nil, err
	}
	if c.refusing.Swap(false) {
		c.log.Warn("local ClickHouse's own socket listens on its address again; connecting", "addr", ap.String())
	}
	return conn, nil
}

// check returns the inode of the socket listening on ap if it is the
// server's own.
func (c *listenerCheck) check(ap netip.AddrPort) (uint64, error) {
	inode, uid, err := listeningSocket(ap)
	if err != nil {
		return 0, fmt.Errorf("connecting to local ClickHouse at %s: %w", ap, err)
	}
	if self := os.Geteuid(); uid != self {
		return 0, c.refuse(ap, fmt.Errorf("the socket listening on %s belongs to uid %d, not to this user (uid %d)", ap, uid, self))
	}
	pid, err := c.pid()
	if err == nil {
		err = holds(pid, inode)
	}
	if errors.Is(err, fs.ErrPermission) {
		// A server that gained file capabilities when it was started
		// (ClickHouse's official packages give them; NoNewPrivileges=
		// withholds them) is not dumpable: only root may read its open
		// files. Its socket is then trusted by its owner alone, which no
		// other user can fake; this user's own programs can read the
		// password file anyway.
		if !c.byOwner.Swap(true) {
			c.log.Warn("cannot read local ClickHouse's open files (it runs with file capabilities); trusting its listening socket by its owner, this user, alone",
				"addr", ap.String(), "err", err)
		}
		err = nil
	}
	if err != nil {
		return 0, c.refuse(ap, fmt.Errorf("the socket listening on %s (uid %d): %w", ap, uid, err))
	}
	return inode, nil
}

func (c *listenerCheck) refuse(ap netip.AddrPort, err error) error {
	c.refused.Add(1)
	err = fmt.Errorf("not connecting to local ClickHouse, its password not sent: %w: %v; another local program may have taken the port", ErrForeignListener, err)
	if !c.refusing.Swap(true) {
		c.log.Error("refusing to connect to local ClickHouse until its own socket listens on its address", "addr", ap.String(), "err", err)
	}
	return err
}

// listeningSocket finds the TCP socket in LISTEN state bound to exactly ap
// in /proc/net/tcp or tcp6 (this process's network namespace) and returns
// its inode and the uid that made it.
func listeningSocket(ap netip.AddrPort) (inode uint64, uid int, err error) {
	ip := ap.Addr().Unmap()
	table := "/proc/net/tcp"
	if ip.Is6() {
		table = "/proc/net/tcp6"
	}
	want := procAddr(netip.AddrPortFrom(ip, ap.Port()))
	f, err := os.Open(table)
	if err != nil {
		return 0, 0, fmt.Errorf("finding the socket listening there: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != tcpListen || !strings.EqualFold(fields[1], want) {
			continue
		}
		u, err1 := strconv.Atoi(fields[7])
		n, err2 := strconv.ParseUint(fields[9], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("reading %s: bad line %q", table, sc.Text())
		}
		return n, u, nil
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("reading %s: %w", table, err)
	}
	return 0, 0, errNotListening
}

// tcpListen is TCP_LISTEN as /proc/net/tcp writes a socket's state.
const tcpListen = "0A"

// procAddr writes ap as /proc/net/tcp{,6} does: the address as 32-bit
// words in host byte order, each in hex, then the port in hex.
func procAddr(ap netip.AddrPort) string {
	b := ap.Addr().AsSlice()
	var s strings.Builder
	for i := 0; i < len(b); i += 4 {
		var w [4]byte
		binary.NativeEndian.PutUint32(w[:], binary.BigEndian.Uint32(b[i:i+4]))
		s.WriteString(strings.ToUpper(hex.EncodeToString(w[:])))
	}
	fmt.Fprintf(&s, ":%04X", ap.Port())
	return s.String()
}

// holds returns nil when process pid, or another process of its process
// group (a server that forks keeps it), has the socket inode open.
func holds(pid int, inode uint64) error {
	link := []byte("socket:[" + strconv.FormatUint(inode, 10) + "]")
	found, err := hasFD(pid, link)
	if found || err != nil {
		return err
	}
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	members, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range members {
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
		if p == pid || !inGroup(stat, pgid) {
			continue
		}
		if found, _ := hasFD(p, link); found {
			return nil
		}
	}
	return fmt.Errorf("it is not held by local ClickHouse (process %d)", pid)
}

func hasFD(pid int, link []byte) (bool, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("reading the open files of local ClickHouse (process %d): %w", pid, err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && target == string(link) {
			return true, nil
		}
	}
	return false, nil
}

// inGroup reports whether the process whose /proc/<pid>/stat is stat is in
// process group pgid.
func inGroup(stat string, pgid int) bool {
	b, err := os.ReadFile(stat)
	if err != nil {
		return false
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:]))
	return len(f) >= 3 && f[2] == strconv.Itoa(pgid)
}
