// Package chdb runs ClickHouse 26.x from the chdb library (libchdb.so,
// fetched by make chdb) as a native-protocol server in a child process:
// the second engine of the tests and of the report benchmark. It is a test
// and benchmark server, never the managed default: an error that escapes a
// connection's handler (a failed login, a read cut by a reset) aborts it,
// it has no users or passwords, and it is not supervised.
package chdb

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ebitengine/purego"
)

// serveEnv marks the child process: the program run again by Start as the
// server. Its value is the parent's PID, which the child watches so that
// it does not outlive a parent that was killed. libEnv passes it the
// library's path.
const (
	serveEnv = "H3RUM_CHDB_SERVE"
	libEnv   = "H3RUM_CHDB_LIB"
)

// Server is ClickHouse 26.x serving the native protocol from a child
// process that loaded libchdb.so: the library's command-line entry runs a
// query, and while the query runs (ten hours of sleepEachRow) the listener
// it started with SYSTEM START LISTEN TCP answers. An error that escapes a
// connection's handler (a failed login: a missing database in a DSN, a
// wrong password; a read cut by a reset, which store's connections avoid
// by closing gently) aborts that process, so it is not the calling program
// itself, and databases are created (DSN) before clients connect to them.
type Server struct {
	dir    string // data under dir/data, output in dir/server.log
	keep   bool   // dir was given: Stop leaves it
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the child's exit, once exited is closed
	admin  driver.Conn
}

// Start starts the listener of the library at lib on a free port, with
// settings as its sessions' defaults, in this program run again: the
// program's main (or TestMain) must call Serve first. Its data lives in a
// temporary folder that Stop removes.
func Start(ctx context.Context, lib string, settings map[string]string) (*Server, error) {
	dir, err := os.MkdirTemp("", "h3rum-chdb-")
	if err != nil {
		return nil, err
	}
	return start(ctx, lib, &Server{dir: dir}, settings)
}

// StartIn is Start with its data in dir, created if missing and kept by
// Stop: a later server started in dir finds the databases it left.
func StartIn(ctx context.Context, lib, dir string, settings map[string]string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return start(ctx, lib, &Server{dir: dir, keep: true}, settings)
}

func start(ctx context.Context, lib string, s *Server, settings map[string]string) (*Server, error) {
	if _, err := os.Stat(lib); err != nil {
		s.Stop()
		return nil, fmt.Errorf("the chdb library: %w (make chdb fetches it)", err)
	}
	exe, err := os.Executable()
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("finding this program: %w", err)
	}
	for attempt := 0; ; attempt++ {
		err = s.start(ctx, exe, lib, settings)
		if err == nil || attempt == 2 || ctx.Err() != nil {
			break
		}
		// Another process may have taken the port between its choice and
		// the child's bind: try another.
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, exe, lib string, settings map[string]string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	// -test.run=^$ first: a test binary whose TestMain does not call Serve
	// runs no tests with these arguments instead of running them all
	// again; Serve drops everything up to "--".
	args := []string{"-test.run=^$", "--",
		"--path=" + filepath.Join(s.dir, "data"),
		"--tcp_port=" + strconv.Itoa(s.port),
		"--listen_host=127.0.0.1",
		// At its default level the library logs every query at trace
		// level: about 100 MB an hour. Warnings and worse go to the
		// console, which is server.log: the reason of a crash is there.
		"--logger.level=warning", "--logger.console=1", "--log-level=warning",
	}
	// Settings given as options are the defaults of the listener's sessions.
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "--"+k+"="+settings[k])
	}
	args = append(args, "--multiquery",
		"--query", "SYSTEM START LISTEN TCP; SELECT sleepEachRow(1) FROM numbers(36000) SETTINGS function_sleep_max_microseconds_per_block=0")
	cmd := exec.Command(exe, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), serveEnv+"="+strconv.Itoa(os.Getpid()), libEnv+"="+lib)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a ^C to the program reaches it through the
	// parent's Stop, not halfway through its work.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the 26.x server: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() { s.err = cmd.Wait(); close(s.exited) }()

	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("the 26.x server exited at start (%v): %s", s.err, s.LogTail())
		case <-wait.Done():
			s.Stop()
			return fmt.Errorf("the 26.x server did not answer on port %d within a minute: %s", s.port, s.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), time.Second)
		if err != nil {
			continue
		}
		c.Close()
		// Only the default database exists yet, and only its login cannot fail.
		admin, err := clickhouse.Open(&clickhouse.Options{Addr: []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))}})
		if err == nil {
			if err = admin.Ping(wait); err == nil {
				s.admin = admin
				return nil
			}
			admin.Close()
		}
	}
}

// DSN creates database on the server and returns its DSN.
func (s *Server) DSN(database string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.admin.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+database+"`"); err != nil {
		return "", fmt.Errorf("creating database %s on the 26.x server: %w (%s)", database, err, s.LogTail())
	}
	u := url.URL{Scheme: "clickhouse", User: url.User("default"),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), Path: "/" + database}
	return u.String(), nil
}

// Dir is the folder of the server's data and output.
func (s *Server) Dir() string { return s.dir }

// Stop ends the child by its PID, SIGKILL if SIGTERM is not enough within
// 10 s, and removes its files unless they are StartIn's; it returns an error if the child had
// already exited, which is a crash.
func (s *Server) Stop() error {
	if s.admin != nil {
		s.admin.Close()
	}
	var crashed error
	if s.cmd != nil {
		select {
		case <-s.exited:
			// The listener aborts on an error that escapes a connection's
			// handler; its log names the error.
			crashed = fmt.Errorf("the 26.x server had exited (%v): %s", s.err, s.LogTail())
		default:
			s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(10 * time.Second):
				s.cmd.Process.Kill()
				<-s.exited
			}
		}
	}
	if !s.keep {
		os.RemoveAll(s.dir)
	}
	return crashed
}

// stackFrame matches a line of a stack trace in the server's log.
var stackFrame = regexp.MustCompile(`^\s*(\S+ \S+ \[ \d+ \] \{\S*\} <\w+> \w+: )?\d+\. `)

// LogTail is the last lines of the server's output, without its stack
// traces' frames; after a crash, the exception that caused it.
func (s *Server) LogTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.TrimSpace(l) != "" && !stackFrame.MatchString(l) {
			lines = append(lines, l)
		}
	}
	for i := len(lines) - 2; i >= 0; i-- {
		if strings.Contains(lines[i], "Terminate called") {
			return lines[i] + "\n" + lines[i+1]
		}
	}
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}

// Serve is the child process's part: when this process was started by
// Start, it loads the library and runs its command-line entry with the
// process's arguments after "--" (clickhouse-local's), returning its exit
// code and true only when the query ends; otherwise 0 and false at once.
// A program that calls Start calls Serve first in main (or TestMain) and
// exits with the code when ok.
func Serve() (code int, ok bool) {
	if os.Getenv(serveEnv) == "" {
		return 0, false
	}
	return serve(os.Getenv(libEnv), os.Args[1:]), true
}

// serve loads the library at lib and runs its command-line entry with
// args. It exits at once if its parent, the program that called Start, is
// gone.
func serve(lib string, args []string) int {
	if parent, err := strconv.Atoi(os.Getenv(serveEnv)); err == nil {
		go func() {
			for os.Getppid() == parent {
				time.Sleep(time.Second)
			}
			os.Exit(1)
		}()
	}
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[i+1:]
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loading %s: %v\n", lib, err)
		return 1
	}
	var (
		cmdline     func(argc int32, argv **byte) unsafe.Pointer
		resultError func(result unsafe.Pointer) *byte
	)
	purego.RegisterLibFunc(&cmdline, h, "chdb_query_cmdline")
	purego.RegisterLibFunc(&resultError, h, "chdb_result_error")
	argv := make([]*byte, 0, len(args)+2)
	for _, a := range append([]string{"clickhouse"}, args...) {
		b := append([]byte(a), 0)
		argv = append(argv, &b[0])
	}
	argv = append(argv, nil)
	res := cmdline(int32(len(argv)-1), &argv[0])
	if res == nil {
		fmt.Fprintln(os.Stderr, "chdb_query_cmdline returned no result")
		return 1
	}
	if msg := resultError(res); msg != nil {
		fmt.Fprintf(os.Stderr, "chdb_query_cmdline: %s\n", cString(msg))
		return 1
	}
	return 0
}

func cString(p *byte) string {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return unsafe.String(p, n)
}
