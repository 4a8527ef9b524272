package local_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/local"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

func TestLocalRestartKeepsPortAndData(t *testing.T) {
	l := storetest.Private(t)
	ctx := context.Background()
	conn, err := store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "CREATE TABLE t (x UInt32) ENGINE = MergeTree ORDER BY x"); err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "INSERT INTO t (x) SELECT 7"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	dsn := l.DSN()
	recorded, err := local.ReadDSN(l.Dir)
	if err != nil || recorded != dsn {
		t.Fatalf("ReadDSN = %q, %v; want %q", recorded, err, dsn)
	}
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(l.Dir, local.AddressFile)); !os.IsNotExist(err) {
		t.Errorf("address file still present after Stop: %v", err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if l.DSN() != dsn {
		t.Errorf("DSN changed across restart: %s → %s", dsn, l.DSN())
	}
	conn, err = store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var x uint32
	if err := conn.QueryRow(ctx, "SELECT x FROM t").Scan(&x); err != nil || x != 7 {
		t.Fatalf("after restart: x = %d, %v; want 7", x, err)
	}
}

func TestLocalMissingBinary(t *testing.T) {
	l := &local.Server{Dir: t.TempDir(), Binary: filepath.Join(t.TempDir(), "no-such-clickhouse")}
	if err := l.Start(context.Background()); err == nil {
		l.Stop(context.Background())
		t.Fatal("Start with a missing binary succeeded")
	}
}

// The managed server has a password, generated at first start and kept
// with the DSN in files only their owner can read: a connection without it
// is refused. A data dir from a release without a password (config and
// address files readable by the group) gets one on its next start, and
// the data stays.
func TestLocalPassword(t *testing.T) {
	l := storetest.Private(t)
	ctx := context.Background()
	for _, name := range []string{local.PasswordFile, local.AddressFile, "config.xml"} {
		fi, err := os.Stat(filepath.Join(l.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
	pw, err := os.ReadFile(filepath.Join(l.Dir, local.PasswordFile))
	if err != nil || len(strings.TrimSpace(string(pw))) < 32 {
		t.Fatalf("password file %q (%v): want at least 32 characters", pw, err)
	}
	if cfg, _ := os.ReadFile(filepath.Join(l.Dir, "config.xml")); strings.Contains(string(cfg), strings.TrimSpace(string(pw))) {
		t.Error("config.xml holds the password itself, not its hash")
	}
	u, err := url.Parse(l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []*url.Userinfo{url.User("default"), url.UserPassword("default", "wrong")} {
		u.User = user
		if conn, err := store.Open(ctx, u.String()); err == nil {
			conn.Close()
			t.Errorf("connected as %q without the right password", user.String())
		}
	}
	conn, err := store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatalf("with the password: %v", err)
	}
	if err := conn.Exec(ctx, "CREATE TABLE kept (x UInt8) ENGINE = TinyLog"); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	// An older data dir: no password file, loose modes.
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(l.Dir, local.PasswordFile))
	os.Chmod(filepath.Join(l.Dir, "config.xml"), 0o644)
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pw2, _ := os.ReadFile(filepath.Join(l.Dir, local.PasswordFile))
	if len(pw2) == 0 || string(pw2) == string(pw) {
		t.Errorf("no fresh password for a data dir without one: %q", pw2)
	}
	if fi, _ := os.Stat(filepath.Join(l.Dir, "config.xml")); fi.Mode().Perm() != 0o600 {
		t.Errorf("config.xml mode %v after restart, want 0600", fi.Mode().Perm())
	}
	conn, err = store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'kept'").Scan(&n); err != nil || n != 1 {
		t.Errorf("table lost across the password change: %d, %v", n, err)
	}

	// A password file others could read is no secret: it is replaced.
	conn.Close()
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(l.Dir, local.PasswordFile), 0o644)
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pw3, _ := os.ReadFile(filepath.Join(l.Dir, local.PasswordFile))
	if fi, _ := os.Stat(filepath.Join(l.Dir, local.PasswordFile)); len(pw3) == 0 || string(pw3) == string(pw2) || fi.Mode().Perm() != 0o600 {
		t.Errorf("a password file readable by others was kept (mode %v)", fi.Mode().Perm())
	}
}

// A supervised server that dies is started again on the same port, with
// its data and password; Stop ends the supervision (no restart after it).
func TestLocalSupervisedRestart(t *testing.T) {
	l := storetest.Private(t)
	ctx := context.Background()
	conn, err := store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "CREATE TABLE kept (x UInt8) ENGINE = TinyLog"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	dsn := l.DSN()
	l.Supervise()
	pid := l.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for (l.Restarts() == 0 || !l.Up()) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if l.Restarts() != 1 || !l.Up() || l.PID() == pid {
		t.Fatalf("after a kill: restarts %d, up %v, pid %d (was %d); want a restarted server", l.Restarts(), l.Up(), l.PID(), pid)
	}
	if l.DSN() != dsn {
		t.Errorf("DSN changed across the restart: %s → %s", dsn, l.DSN())
	}
	conn, err = store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'kept'").Scan(&n); err != nil || n != 1 {
		t.Errorf("after the restart: table kept %d, %v", n, err)
	}
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * superviseWait)
	if l.Up() || l.PID() != 0 || l.Restarts() != 1 {
		t.Errorf("after Stop: up %v, pid %d, restarts %d; want stopped for good", l.Up(), l.PID(), l.Restarts())
	}
}

// superviseWait is longer than the first restart's backoff.
const superviseWait = time.Second

// impostorEnv tells the test binary to run TestImpostorListener as the
// impostor of TestHostileLocalUserTakesPort: the address to bind.
const impostorEnv = "STORE_TEST_IMPOSTOR_ADDR"

// TestImpostorListener is not a test: run by TestHostileLocalUserTakesPort
// in a process of another user, it binds the managed server's address as
// soon as it is free, says "listening", and writes in hex everything any
// connection sends it, until it is killed.
func TestImpostorListener(t *testing.T) {
	addr := os.Getenv(impostorEnv)
	if addr == "" {
		t.Skip("the impostor of TestHostileLocalUserTakesPort")
	}
	var ln net.Listener
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		var err error
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Println("gave up:", err)
			os.Exit(1)
		}
	}
	var out sync.Mutex
	fmt.Println("listening")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			out.Lock()
			fmt.Println("connection")
			out.Unlock()
			buf := make([]byte, 4096)
			for {
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, err := c.Read(buf)
				if n > 0 {
					out.Lock()
					fmt.Println("data", hex.EncodeToString(buf[:n]))
					out.Unlock()
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// A local user who binds the managed server's port while it restarts gets
// nothing from h3rum, the password least of all: the pool's next
// connection, and the supervisor's connections to the restarted server, are
// refused (one log line for the episode, every refusal counted) because the
// socket listening there is not the server's. Once the impostor is gone
// and the server back, the same pool works again. The impostor runs as
// uid 65534 when the test runs as root.
func TestHostileLocalUserTakesPort(t *testing.T) {
	var logs syncBuffer
	l := &local.Server{Dir: filepath.Join(t.TempDir(), "clickhouse"), Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := l.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := l.Stop(ctx); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	conn, err := store.OpenManaged(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Exec(ctx, "CREATE TABLE kept (x UInt8) ENGINE = TinyLog"); err != nil {
		t.Fatal(err)
	}
	pw, err := os.ReadFile(filepath.Join(l.Dir, local.PasswordFile))
	if err != nil {
		t.Fatal(err)
	}
	password := bytes.TrimSpace(pw)
	l.Supervise()

	imp := startImpostor(t, fmt.Sprintf("127.0.0.1:%d", l.Port))
	if err := syscall.Kill(l.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !imp.waitFor("listening", 5*time.Second) {
		t.Fatalf("the impostor did not bind the port within 5 s (the supervisor restarted the server first?): %s", imp.output())
	}

	// While the impostor holds the port, every query fails, and says why.
	var refused error
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var n uint64
		err := conn.QueryRow(qctx, "SELECT count() FROM kept").Scan(&n)
		cancel()
		if err == nil {
			t.Fatal("a query succeeded while the impostor held the port")
		}
		if strings.Contains(err.Error(), local.ErrForeignListener.Error()) {
			refused = err
		}
	}
	if refused == nil {
		t.Error("no query failed naming the foreign listener")
	} else {
		t.Logf("a query meanwhile: %v", refused)
	}
	n := l.RefusedDials()
	imp.stop()
	out := imp.output()
	if bytes.Contains(out, []byte(hex.EncodeToString(password))) {
		t.Fatalf("the impostor received the password; it saw:\n%s", out)
	}
	if c := bytes.Count(out, []byte("\nconnection")); c != 0 {
		t.Errorf("h3rum connected to the impostor %d times (without the password)", c)
	}
	if n < 2 {
		t.Errorf("RefusedDials = %d while the impostor held the port; want every refused connection counted", n)
	}
	if c := strings.Count(logs.String(), "refusing to connect to local ClickHouse"); c != 1 {
		t.Errorf("%d log lines for one episode of %d refusals, want 1:\n%s", c, n, logs.String())
	}

	// The impostor gone, the supervisor's next start succeeds, and the same
	// pool reaches the server again.
	deadline := time.Now().Add(60 * time.Second)
	for {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var n uint64
		err := conn.QueryRow(qctx, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'kept'").Scan(&n)
		cancel()
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery within 60 s after the impostor left: %v (up %v, restarts %d)\n%s", err, l.Up(), l.Restarts(), logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "own socket listens on its address again") {
		t.Errorf("the end of the episode is not logged:\n%s", logs.String())
	}
	t.Logf("%d connections refused, %d restarts", l.RefusedDials(), l.Restarts())
}

// impostor is a process that takes a port, run as another user if it can.
type impostor struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startImpostor(t *testing.T, addr string) *impostor {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// A copy of the test binary another user may run.
		dir, err := os.MkdirTemp("", "h3rum-impostor-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		exe = filepath.Join(dir, "impostor")
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	} else {
		t.Log("not root: the impostor runs as this user, but is not the server's process")
	}
	imp := &impostor{done: make(chan struct{})}
	imp.cmd = exec.Command(exe, "-test.run=^TestImpostorListener$", "-test.v")
	imp.cmd.Dir = "/"
	imp.cmd.Env = append(os.Environ(), impostorEnv+"="+addr)
	imp.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	imp.cmd.Stdout, imp.cmd.Stderr = (*impostorOut)(imp), (*impostorOut)(imp)
	if err := imp.cmd.Start(); err != nil {
		t.Fatalf("starting the impostor: %v", err)
	}
	go func() { imp.cmd.Wait(); close(imp.done) }()
	t.Cleanup(imp.stop)
	return imp
}

type impostorOut impostor

func (o *impostorOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.out.Write(p)
}

func (imp *impostor) output() []byte {
	imp.mu.Lock()
	defer imp.mu.Unlock()
	return append([]byte("\n"), imp.out.Bytes()...)
}

func (imp *impostor) waitFor(line string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if bytes.Contains(imp.output(), []byte("\n"+line+"\n")) {
			return true
		}
	}
	return false
}

func (imp *impostor) stop() {
	imp.cmd.Process.Kill()
	<-imp.done
}

// syncBuffer is a bytes.Buffer for loggers on several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Files and directories of the managed server that another user owns or
// may write are refused, naming the path and what is wrong, before the
// server starts or its address is used: a planted password, address,
// status file or directory. A password others may read is replaced.
func TestLocalRefusesFilesNotPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting another user's files needs root")
	}
	const nobody = 65534
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, dir string) // dir is the server's Dir
		path  string                         // under dir
		want  string
	}{
		{"password of another user", func(t *testing.T, dir string) {
			writeAs(t, filepath.Join(dir, local.PasswordFile), "planted\n", 0o600, nobody)
		}, local.PasswordFile, "owned by uid 65534"},
		{"password its group may write", func(t *testing.T, dir string) {
			writeAs(t, filepath.Join(dir, local.PasswordFile), "loose\n", 0o620, -1)
		}, local.PasswordFile, "its group may write it (mode 0620)"},
		{"status file of another user", func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, "data"), 0o750)
			writeAs(t, filepath.Join(dir, "data", "status"), fmt.Sprintf("PID: %d\n", os.Getpid()), 0o644, nobody)
		}, "data/status", "owned by uid 65534"},
		{"server log of another user", func(t *testing.T, dir string) {
			writeAs(t, filepath.Join(dir, "server.log"), "", 0o644, nobody)
		}, "server.log", "owned by uid 65534"},
		{"directory of another user", func(t *testing.T, dir string) {
			if err := os.Chown(dir, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}, "", "owned by uid 65534"},
		{"directory others may write", func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, "data"), 0o750)
			if err := os.Chmod(filepath.Join(dir, "data"), 0o757); err != nil {
				t.Fatal(err)
			}
		}, "data", "others may write it (mode 0757)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "clickhouse")
			if err := os.MkdirAll(dir, 0o750); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, dir)
			l := &local.Server{Dir: dir}
			err := l.Start(context.Background())
			if err == nil {
				l.Stop(context.Background())
			}
			path := filepath.Join(dir, tc.path)
			if !errors.Is(err, access.ErrNotPrivate) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Start: %v; want a refusal naming %s and %q", err, path, tc.want)
			}
			if l.PID() != 0 {
				t.Error("the server was started")
			}
		})
	}

	// report and migrate read the address that serve recorded: a planted
	// one, or one in a directory another user owns, is not used.
	dir := filepath.Join(t.TempDir(), "clickhouse")
	os.MkdirAll(dir, 0o750)
	address := filepath.Join(dir, local.AddressFile)
	writeAs(t, address, "clickhouse://default:x@127.0.0.1:9/h3rum\n", 0o600, nobody)
	for _, open := range []func() error{
		func() error { _, err := local.ReadDSN(dir); return err },
		func() error {
			c, err := store.OpenLocal(context.Background(), dir)
			if err == nil {
				c.Close()
			}
			return err
		},
	} {
		if err := open(); !errors.Is(err, access.ErrNotPrivate) || !strings.Contains(err.Error(), address) {
			t.Errorf("a planted address file: %v; want a refusal naming it", err)
		}
	}
	os.Chown(address, 0, 0)
	os.Chown(dir, nobody, nobody)
	if _, err := local.ReadDSN(dir); !errors.Is(err, access.ErrNotPrivate) || !strings.Contains(err.Error(), dir) {
		t.Errorf("an address in another user's directory: %v; want a refusal naming the directory", err)
	}
}

// writeAs writes a file with mode and owner uid (-1: this user).
func writeAs(t *testing.T, path, content string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		if err := os.Chown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

// OpenLocal, what report and migrate use, reaches the server that serve
// runs, and only while the process its status file names holds the socket.
func TestOpenLocal(t *testing.T) {
	l := storetest.Private(t)
	ctx := context.Background()
	conn, err := store.OpenLocal(ctx, l.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var db string
	if err := conn.QueryRow(ctx, "SELECT currentDatabase()").Scan(&db); err != nil || db != local.Database {
		t.Errorf("currentDatabase() = %q, %v; want %s", db, err, local.Database)
	}
	conn.Close()

	// A status file naming another process: the socket is not its.
	status := filepath.Join(l.Dir, "data", "status")
	orig, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	other := exec.Command("sleep", "60", l.Dir+"/clickhouse") // its command line names a server of the dir
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	if err := os.WriteFile(status, []byte(fmt.Sprintf("PID: %d\n", other.Process.Pid)), 0o640); err != nil {
		t.Fatal(err)
	}
	conn, err = store.OpenLocal(ctx, l.Dir)
	if err == nil {
		conn.Close()
	}
	if err == nil || !strings.Contains(err.Error(), local.ErrForeignListener.Error()) {
		t.Errorf("with a status file naming process %d: %v; want a refusal", other.Process.Pid, err)
	}
	os.WriteFile(status, orig, 0o640)
}
