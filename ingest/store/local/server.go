// Package local runs ClickHouse as a child process of h3rum: a
// project-local configuration and data directory, a generated password, a
// loopback listener that is checked before the password is sent, and a
// supervisor that restarts the server when it exits.
package local

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/template"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/h3rum/h3rum/ingest/access"
)

// DSN is the --clickhouse value that names the managed server kept under
// --data-dir rather than a server's address.
const DSN = "local"

// Database is the database the managed server keeps h3rum's tables in.
const Database = "h3rum"

// Server is a ClickHouse server that h3rum runs as a child process, with a
// project-local configuration and data directory, listening on loopback only.
// It is the default store for `serve` and what the tests run against.
//
// Its files are refused unless they are this user's and no one else may
// write them (access.CheckPrivate), and the connections of Options' pool
// are made only while the socket listening on the server's address is
// the child's own: the password is sent in clear text over loopback, and
// while the server restarts another local user could bind its port.
type Server struct {
	// Dir holds the server's config, data and logs, e.g. "<data-dir>/clickhouse".
	Dir string
	// Binary is the server executable; empty means clickhouse-server, or
	// "clickhouse server", found on PATH.
	Binary string
	// Port is the native-protocol TCP port; 0 picks a free one at Start and
	// keeps it for later restarts.
	Port int
	// StartTimeout bounds the wait for the server to answer. Default 60 s.
	StartTimeout time.Duration
	// Logger receives start and stop events; nil discards them.
	Logger *slog.Logger
	// ExtraConfig is XML placed inside the server's configuration, e.g.
	// the remote_servers, zookeeper, macros and interserver settings of a
	// cluster member (storetest.StartCluster). Empty for a lone server.
	ExtraConfig string
	// ExtraProfile is XML placed inside the default settings profile, e.g.
	// a cluster member's distributed_ddl_task_timeout.
	ExtraProfile string
	// ExtraMergeTree is XML placed inside the config's one merge_tree
	// section (a second section is ignored), e.g. a cluster member's
	// replicated_max_ratio_of_wrong_parts.
	ExtraMergeTree string

	cmd      *exec.Cmd
	exited   chan struct{}
	log      *os.File
	password string

	checkOnce sync.Once
	listener  *listenerCheck

	up        atomic.Bool
	pid       atomic.Int64
	restarts  atomic.Int64
	supMu     sync.Mutex
	supCancel context.CancelFunc
	supDone   chan struct{}
}

// PasswordFile is the file under Dir that holds the password of the
// server's only user, generated at first start and readable by its owner
// only, so that other local users cannot reach the data.
const PasswordFile = "password"

// AddressFile is the file under Dir that records the running server's DSN
// (password included, so readable by its owner only), so that
// `h3rum report --clickhouse local` finds what `serve` started.
const AddressFile = "address"

// ReadDSN returns the DSN recorded by a Server kept in dir. Connect with
// DirOptions, which check whom they send the password to.
func ReadDSN(dir string) (string, error) {
	if err := access.CheckPrivate(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading the local ClickHouse address: %w", err)
	}
	b, err := access.ReadPrivate(filepath.Join(dir, AddressFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading the local ClickHouse address (is `h3rum serve` running with this --data-dir?): %w", err)
	}
	if err != nil {
		return "", fmt.Errorf("reading the local ClickHouse address: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// DirOptions are the connection options for the server that a running
// Server (another process: `serve`) keeps in dir, for `migrate` and
// `report`. Like Options' they send the password only to the server's own
// socket: the one held by the process its status file names, which must
// be a ClickHouse server of dir run by this user.
func DirOptions(dir string) (*clickhouse.Options, error) {
	dsn, err := ReadDSN(dir)
	if err != nil {
		return nil, err
	}
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing the local ClickHouse address: %w", err)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("opening local ClickHouse: %w", err)
	}
	check := &listenerCheck{log: slog.New(slog.DiscardHandler), pid: func() (int, error) {
		pid, err := statusPID(filepath.Join(dir, "data", "status"))
		if err == nil && pid == 0 {
			err = errors.New("local ClickHouse is not running (its status file names no running server)")
		}
		return pid, err
	}}
	opts.DialContext = check.dial
	return opts, nil
}

// Options are the connection options for the server's Database. Each
// connection a pool with them makes, after the server restarts too, is
// made only while the socket listening on the server's address is the
// server's own.
func (l *Server) Options() (*clickhouse.Options, error) {
	opts, err := clickhouse.ParseDSN(l.DSN())
	if err != nil {
		return nil, fmt.Errorf("opening local ClickHouse: %w", err)
	}
	opts.DialContext = l.check().dial
	return opts, nil
}

// RefusedDials is how many connections to the server were not made (its
// password not sent) because the socket listening on its address was not
// the server's own.
func (l *Server) RefusedDials() int64 { return l.check().refused.Load() }

func (l *Server) check() *listenerCheck {
	l.checkOnce.Do(func() {
		l.listener = &listenerCheck{log: l.logger(), pid: func() (int, error) {
			if pid := l.PID(); pid > 0 {
				return pid, nil
			}
			return 0, errors.New("local ClickHouse is not running")
		}}
	})
	return l.listener
}

// DSN is the address of the server in clickhouse-go's DSN form, with its
// credentials. Valid once Start has returned.
func (l *Server) DSN() string {
	return l.DSNFor(Database)
}

// DSNFor is DSN for another database on the same server.
func (l *Server) DSNFor(database string) string {
	u := url.URL{Scheme: "clickhouse", User: url.UserPassword("default", l.password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port)), Path: "/" + database}
	return u.String()
}

// readPassword returns the password kept in dir, creating it first. A
// password that others could read (an older release's file, or one a user
// loosened) is replaced: the config is written at every start anyway.
func readPassword(dir string) (string, error) {
	path := filepath.Join(dir, PasswordFile)
	f, err := access.OpenPrivate(path, os.O_RDONLY, 0)
	if err == nil {
		fi, err := f.Stat()
		var b []byte
		if err == nil {
			b, err = io.ReadAll(f)
		}
		f.Close()
		if err != nil {
			return "", fmt.Errorf("reading the local ClickHouse password: %w", err)
		}
		if pw := strings.TrimSpace(string(b)); pw != "" && fi.Mode().Perm()&0o077 == 0 {
			return pw, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading the local ClickHouse password: %w", err)
	}
	var raw [32]byte
	rand.Read(raw[:])
	pw := hex.EncodeToString(raw[:])
	if err := writePrivate(path, pw+"\n"); err != nil {
		return "", fmt.Errorf("writing the local ClickHouse password: %w", err)
	}
	return pw, nil
}

// writePrivate replaces path with content readable by its owner only, even
// when an older file was readable by others. The temporary file is new
// (O_EXCL): a stale or planted one would keep its owner and mode.
func writePrivate(path, content string) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

func (l *Server) logger() *slog.Logger {
	if l.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Logger
}

// findBinary resolves the server command line prefix.
func (l *Server) findBinary() ([]string, error) {
	if l.Binary != "" {
		return []string{l.Binary}, nil
	}
	if p, err := exec.LookPath("clickhouse-server"); err == nil {
		return []string{p}, nil
	}
	if p, err := exec.LookPath("clickhouse"); err == nil {
		return []string{p, "server"}, nil
	}
	return nil, errors.New("no clickhouse-server or clickhouse on PATH: install it (Debian: apt-get install clickhouse-server; elsewhere: https://clickhouse.com/docs/install) or pass --clickhouse with a DSN")
}

// Start writes the configuration, starts the server and waits until it
// answers queries, then creates Database.
func (l *Server) Start(ctx context.Context) error {
	if l.cmd != nil {
		return errors.New("starting local ClickHouse: already running")
	}
	bin, err := l.findBinary()
	if err != nil {
		return err
	}
	if l.Dir == "" {
		return errors.New("starting local ClickHouse: no directory given")
	}
	dir, err := filepath.Abs(l.Dir)
	if err != nil {
		return fmt.Errorf("starting local ClickHouse: %w", err)
	}
	l.Dir = dir
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o750); err != nil {
		return fmt.Errorf("creating local ClickHouse directory: %w", err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "data")} {
		if err := access.CheckPrivate(d); err != nil {
			return fmt.Errorf("starting local ClickHouse: %w", err)
		}
	}
	if err := stopStale(filepath.Join(dir, "data", "status"), l.logger()); err != nil {
		return fmt.Errorf("starting local ClickHouse: %w", err)
	}
	if l.Port == 0 {
		if l.Port, err = freePort(); err != nil {
			return fmt.Errorf("choosing a port for local ClickHouse: %w", err)
		}
	}
	if l.password, err = readPassword(dir); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "config.xml")
	if err := writeConfig(cfg, dir, l.Port, l.password, l.ExtraConfig, l.ExtraProfile, l.ExtraMergeTree); err != nil {
		return err
	}
	logf, err := access.OpenPrivate(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("opening local ClickHouse log: %w", err)
	}
	args := append(bin[1:], "--config-file="+cfg)
	cmd := exec.Command(bin[0], args...)
	cmd.Dir = dir
	cmd.Env = childEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group, and SIGTERM if h3rum dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", bin[0], err)
	}
	exited := make(chan struct{})
	l.cmd, l.log, l.exited = cmd, logf, exited
	l.pid.Store(int64(cmd.Process.Pid))
	go func() { cmd.Wait(); close(exited) }()

	if err := l.waitReady(ctx); err != nil {
		l.stop(context.Background())
		return err
	}
	if err := writePrivate(filepath.Join(dir, AddressFile), l.DSN()+"\n"); err != nil {
		l.stop(context.Background())
		return fmt.Errorf("recording local ClickHouse address: %w", err)
	}
	l.up.Store(true)
	l.logger().Info("local ClickHouse started", "port", l.Port, "dir", dir, "pid", cmd.Process.Pid)
	return nil
}

// Up reports whether the server is running and answered at its last
// start.
func (l *Server) Up() bool { return l.up.Load() }

// PID is the server's process id; 0 when it is not running.
func (l *Server) PID() int { return int(l.pid.Load()) }

// Restarts is how many times Supervise has restarted the server.
func (l *Server) Restarts() int64 { return l.restarts.Load() }

// Supervision backoff: the first restart waits superviseMin, each failed
// one doubles the wait, up to superviseMax.
const (
	superviseMin = 500 * time.Millisecond
	superviseMax = 30 * time.Second
)

// Supervise keeps the started server running: when it exits on its own
// (a crash, the OOM killer, someone's kill), it is started again on the
// same port and data, with backoff, until Stop is called. Call it once,
// after Start; it returns at once, and Stop ends it.
func (l *Server) Supervise() {
	l.supMu.Lock()
	defer l.supMu.Unlock()
	if l.supCancel != nil || l.cmd == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.supCancel, l.supDone = cancel, done
	exited := l.exited
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-exited:
			}
			l.up.Store(false)
			l.pid.Store(0)
			l.logger().Warn("local ClickHouse exited; restarting it", "state", l.cmd.ProcessState.String())
			l.log.Close()
			l.cmd = nil
			for wait := superviseMin; ; wait = min(2*wait, superviseMax) {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				err := l.Start(ctx)
				if err == nil {
					l.restarts.Add(1)
					break
				}
				l.logger().Error("restarting local ClickHouse", "err", err, "retry_in", min(2*wait, superviseMax))
			}
			exited = l.exited
		}
	}()
}

// stopSupervising ends Supervise and waits until it has returned, so that
// it does not restart a server being stopped.
func (l *Server) stopSupervising() {
	l.supMu.Lock()
	cancel, done := l.supCancel, l.supDone
	l.supCancel, l.supDone = nil, nil
	l.supMu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (l *Server) waitReady(ctx context.Context) error {
	timeout := l.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := &clickhouse.Options{Addr: []string{fmt.Sprintf("127.0.0.1:%d", l.Port)}, DialTimeout: time.Second,
		Auth: clickhouse.Auth{Username: "default", Password: l.password}, DialContext: l.check().dial}
	var lastErr error
	for {
		conn, err := clickhouse.Open(opts)
		if err == nil {
			err = conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+Database)
			conn.Close()
			if err == nil {
				return nil
			}
		}
		lastErr = err
		select {
		case <-l.exited:
			return fmt.Errorf("local ClickHouse exited during start-up (%v); last log lines:\n%s", l.cmd.ProcessState, tail(filepath.Join(l.Dir, "server.log"), 15))
		case <-ctx.Done():
			return fmt.Errorf("local ClickHouse did not answer within %v: %w", timeout, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop terminates the server and waits for it to exit; if ctx ends first,
// the server is killed.
func (l *Server) Stop(ctx context.Context) error {
	l.stopSupervising()
	return l.stop(ctx)
}

func (l *Server) stop(ctx context.Context) error {
	if l.cmd == nil {
		return nil
	}
	l.up.Store(false)
	defer func() {
		l.log.Close()
		os.Remove(filepath.Join(l.Dir, AddressFile))
		l.cmd = nil
		l.pid.Store(0)
	}()
	l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.exited:
		l.logger().Info("local ClickHouse stopped")
		return nil
	case <-ctx.Done():
		syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		<-l.exited
		return fmt.Errorf("local ClickHouse did not stop in time and was killed: %w", ctx.Err())
	}
}

// Kill stops the server abruptly, as a crash would.
func (l *Server) Kill() {
	l.stopSupervising()
	if l.cmd == nil {
		return
	}
	l.up.Store(false)
	syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
	<-l.exited
	l.log.Close()
	l.cmd = nil
	l.pid.Store(0)
}

// stopStale terminates a server left running on this directory by an
// earlier h3rum that died without stopping it: two servers cannot share
// one data directory.
func stopStale(statusFile string, log *slog.Logger) error {
	pid, err := statusPID(statusFile)
	if err != nil || pid == 0 {
		return err
	}
	log.Warn("stopping a local ClickHouse left running by an earlier h3rum", "pid", pid)
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	return nil
}

// statusPID returns the process id in the status file a server writes
// into its data directory, if that process is running as this user and is
// a ClickHouse server of this directory; 0 if there is none. A status file
// another user could have written is refused.
func statusPID(statusFile string) (int, error) {
	b, err := access.ReadPrivate(statusFile)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the local ClickHouse status: %w", err)
	}
	var pid int
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PID: "); ok {
			pid, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if pid <= 0 {
		return 0, nil
	}
	proc := fmt.Sprintf("/proc/%d", pid)
	cmdline, err := os.ReadFile(proc + "/cmdline")
	if err != nil || !bytes.Contains(cmdline, []byte("clickhouse")) || !bytes.Contains(cmdline, []byte(filepath.Dir(filepath.Dir(statusFile)))) {
		return 0, nil
	}
	if fi, err := os.Stat(proc); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != os.Geteuid() {
		return 0, nil
	}
	return pid, nil
}

// childEnv is env without h3rum's own variables: the server has no use for
// the tokens and DSNs they may hold.
func childEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "H3RUM_") {
			out = append(out, kv)
		}
	}
	return out
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// The config works on 18.16 (users, profiles and quotas inline; mark cache
// size required) and on current servers. max_threads is the machine's CPU
// count: 18.16's automatic value counts physical cores the way its time did
// and came to 1 on a 2-vCPU machine, which ran every report query on one
// core. old_parts_lifetime is short so
// that partitions dropped for retention cannot come back after a restart.
var configTemplate = template.Must(template.New("config").Parse(`<?xml version="1.0"?>
<yandex>
    <logger><level>warning</level><console>1</console></logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>{{.Port}}</tcp_port>
    <path>{{.Dir}}/data/</path>
    <tmp_path>{{.Dir}}/data/tmp/</tmp_path>
    <user_files_path>{{.Dir}}/data/user_files/</user_files_path>
    <format_schema_path>{{.Dir}}/data/format_schemas/</format_schema_path>
    <mark_cache_size>268435456</mark_cache_size>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
    <merge_tree><old_parts_lifetime>10</old_parts_lifetime>{{.MergeTree}}</merge_tree>
    <users>
        <default>
            <password_sha256_hex>{{.PasswordHash}}</password_sha256_hex>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <profiles><default><max_memory_usage>4000000000</max_memory_usage><max_threads>{{.Threads}}</max_threads>{{.Profile}}</default></profiles>
    <quotas><default></default></quotas>
{{.Extra}}
</yandex>
`))

func writeConfig(path, dir string, port int, password, extra, profile, mergeTree string) error {
	var b bytes.Buffer
	sum := sha256.Sum256([]byte(password))
	if err := configTemplate.Execute(&b, struct {
		Dir          string
		Port         int
		PasswordHash string
		Threads      int
		Profile      string
		Extra        string
		MergeTree    string
	}{dir, port, hex.EncodeToString(sum[:]), runtime.NumCPU(), profile, extra, mergeTree}); err != nil {
		return fmt.Errorf("rendering local ClickHouse config: %w", err)
	}
	if err := writePrivate(path, b.String()); err != nil {
		return fmt.Errorf("writing local ClickHouse config: %w", err)
	}
	return nil
}
