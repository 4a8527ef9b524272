//go:build unix

// Package webkit runs WebKitGTK (Debian's webkit2gtk-driver and its
// MiniBrowser) on a private Xvfb display through W3C WebDriver, for
// end-to-end tests of the beacon and the collector in the WebKit engine.
package webkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/h3rum/h3rum/beacon/internal/tail"
)

// DefaultDriver is where Debian's webkit2gtk-driver installs the driver
// (make deps installs it).
const DefaultDriver = "/usr/bin/WebKitWebDriver"

// browserGlob finds the MiniBrowser Debian's libwebkit2gtk-4.1-0 ships, in
// the multiarch library directory.
const browserGlob = "/usr/lib/*/webkit2gtk-4.1/MiniBrowser"

const installHint = "Debian: apt-get install webkit2gtk-driver xvfb; make deps does"

// Options configure a WebKit run. The zero value is usable but trusts no
// certificate: a page on https with a test certificate then fails.
type Options struct {
	// Driver is the WebKitWebDriver binary; "" means DefaultDriver, then
	// WebKitWebDriver on $PATH.
	Driver string
	// Browser is the browser the driver runs in automation mode; "" means
	// Debian's MiniBrowser.
	Browser string
	// Certificates are server certificates the browser accepts for a host
	// although no trusted CA signed them: WebKitGTK's own per-host
	// allowance (webkitgtk:browserOptions.certificates), which pins the
	// exact certificate, unlike AcceptInsecureCerts.
	Certificates []Certificate
	// AcceptInsecureCerts makes the session ignore every TLS error.
	AcceptInsecureCerts bool
	// Display is the X display to use, e.g. ":0"; "" starts a private
	// Xvfb for this browser and stops it on Close.
	Display string
	// PageLoadTimeout bounds a navigation; 0 means 30 s.
	PageLoadTimeout time.Duration
}

// Certificate is a PEM server certificate to accept for Host.
type Certificate struct {
	Host string // host name as in URLs, e.g. "localhost"
	File string // PEM certificate file (the server's own, not its CA)
}

// Find returns the driver and browser binaries to run, or an error that
// says how to install them.
func Find(opts Options) (driver, browser string, err error) {
	driver, browser = opts.Driver, opts.Browser
	switch {
	case driver != "":
		if _, err := os.Stat(driver); err != nil {
			return "", "", fmt.Errorf("webkit driver %q: %w", driver, err)
		}
	default:
		if _, err := os.Stat(DefaultDriver); err == nil {
			driver = DefaultDriver
		} else if driver, err = exec.LookPath("WebKitWebDriver"); err != nil {
			return "", "", errors.New("no WebKitWebDriver: install it (" + installHint + ")")
		}
	}
	if browser == "" {
		m, _ := filepath.Glob(browserGlob)
		if len(m) == 0 {
			return "", "", errors.New("no MiniBrowser under " + browserGlob + " (" + installHint + ")")
		}
		browser = m[0]
	} else if _, err := os.Stat(browser); err != nil {
		return "", "", fmt.Errorf("webkit browser %q: %w", browser, err)
	}
	return driver, browser, nil
}

// Browser is a running WebDriver session in WebKitGTK.
type Browser struct {
	xvfb, driver *exec.Cmd
	xvfbDone     chan struct{}
	driverDone   chan struct{}
	dir          string // XDG directories of the driver and browser
	base         string // http://127.0.0.1:port/session/id
	out          *tail.Buffer
	once         sync.Once
	closeErr     error
}

// Start starts Xvfb (unless opts.Display is set), WebKitWebDriver and a
// session, and opens url in it unless url is "". It is bounded by ctx.
// Close it when done.
func Start(ctx context.Context, url string, opts Options) (*Browser, error) {
	driver, browser, err := Find(opts)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "h3rum-webkit-")
	if err != nil {
		return nil, fmt.Errorf("webkit directory: %w", err)
	}
	b := &Browser{dir: dir, out: &tail.Buffer{Max: 8 << 10}}
	fail := func(err error) (*Browser, error) {
		b.Close()
		return nil, err
	}
	display := opts.Display
	if display == "" {
		if display, err = b.startXvfb(ctx); err != nil {
			return fail(err)
		}
	}
	if err := b.startDriver(ctx, driver, display); err != nil {
		return fail(err)
	}
	if err := b.newSession(ctx, browser, opts); err != nil {
		return fail(err)
	}
	if url != "" {
		if err := b.Navigate(ctx, url); err != nil {
			return fail(err)
		}
	}
	return b, nil
}

// startXvfb starts a private X server on the first free display, which
// Xvfb itself picks and writes to a pipe (-displayfd): no lock-file race
// with other tests, as xvfb-run -a has.
func (b *Browser) startXvfb(ctx context.Context) (string, error) {
	bin, err := exec.LookPath("Xvfb")
	if err != nil {
		return "", errors.New("no Xvfb, WebKitGTK needs a display: install it (" + installHint + ")")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("xvfb pipe: %w", err)
	}
	defer r.Close()
	b.xvfb = exec.Command(bin, "-displayfd", "3", "-nolisten", "tcp", "-screen", "0", "1280x800x24")
	b.xvfb.ExtraFiles = []*os.File{w}
	b.xvfb.Stdout, b.xvfb.Stderr = b.out, b.out
	b.xvfb.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = b.xvfb.Start()
	w.Close()
	if err != nil {
		b.xvfb = nil
		return "", fmt.Errorf("starting Xvfb: %w", err)
	}
	b.xvfbDone = make(chan struct{})
	go func() { b.xvfb.Wait(); close(b.xvfbDone) }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if _, err := strconv.Atoi(s); err != nil {
			return "", fmt.Errorf("xvfb gave no display (%q); output: %s", s, b.out)
		}
		return ":" + s, nil
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for Xvfb: %w", ctx.Err())
	case <-time.After(15 * time.Second):
		return "", fmt.Errorf("xvfb not ready within 15 s; output: %s", b.out)
	}
}

// startDriver starts WebKitWebDriver on a free loopback port and waits
// until it answers /status. The driver cannot report a port it picked
// itself, so a port is chosen here, and another one tried if it was taken
// in between.
func (b *Browser) startDriver(ctx context.Context, bin, display string) error {
	var last error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return err
		}
		b.driver = exec.Command(bin, "--port="+strconv.Itoa(port), "--host=local")
		env := []string{"DISPLAY=" + display, "NO_AT_BRIDGE=1", "GIO_USE_VFS=local"}
		for _, x := range []string{"XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"} {
			d := filepath.Join(b.dir, strings.ToLower(strings.TrimPrefix(x, "XDG_")))
			if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("webkit directory: %w", err)
			}
			env = append(env, x+"="+d)
		}
		b.driver.Env = append(filteredEnv(), env...)
		b.driver.Stdout, b.driver.Stderr = b.out, b.out
		b.driver.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := b.driver.Start(); err != nil {
			b.driver = nil
			return fmt.Errorf("starting %s: %w", bin, err)
		}
		b.driverDone = make(chan struct{})
		go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(b.driver, b.driverDone)
		root := "http://127.0.0.1:" + strconv.Itoa(port)
		if last = b.awaitDriver(ctx, root); last == nil {
			b.base = root
			return nil
		}
		b.killDriver()
		if ctx.Err() != nil {
			break
		}
	}
	return last
}

// filteredEnv is the test's environment without what would point the
// browser at another display or session bus.
func filteredEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "DISPLAY", k == "WAYLAND_DISPLAY", k == "DBUS_SESSION_BUS_ADDRESS", strings.HasPrefix(k, "XDG_"):
			continue
		}
		env = append(env, kv)
	}
	return env
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// awaitDriver polls GET /status (bounded: 15 s) until the driver is ready.
func (b *Browser) awaitDriver(ctx context.Context, root string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		var st struct {
			Ready bool `json:"ready"`
		}
		if err := call(ctx, http.MethodGet, root+"/status", nil, &st); err == nil && st.Ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for WebKitWebDriver: %w; output: %s", ctx.Err(), b.out)
		case <-b.driverDone:
			return fmt.Errorf("WebKitWebDriver exited before it was ready; output: %s", b.out)
		case <-tick.C:
		}
	}
}

// newSession opens the W3C session that launches the browser.
func (b *Browser) newSession(ctx context.Context, browser string, opts Options) error {
	load := opts.PageLoadTimeout
	if load <= 0 {
		load = 30 * time.Second
	}
	wk := map[string]any{"binary": browser, "args": []string{"--automation"}}
	if len(opts.Certificates) > 0 {
		var certs []map[string]string
		for _, c := range opts.Certificates {
			abs, err := filepath.Abs(c.File)
			if err != nil {
				return fmt.Errorf("certificate file: %w", err)
			}
			if _, err := os.Stat(abs); err != nil {
				return fmt.Errorf("certificate for %s: %w", c.Host, err)
			}
			certs = append(certs, map[string]string{"host": c.Host, "certificateFile": abs})
		}
		wk["certificates"] = certs
	}
	caps := map[string]any{
		"acceptInsecureCerts":      opts.AcceptInsecureCerts,
		"webkitgtk:browserOptions": wk,
		"timeouts":                 map[string]int64{"pageLoad": load.Milliseconds(), "script": 30000},
	}
	var s struct {
		SessionID string `json:"sessionId"`
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := call(ctx, http.MethodPost, b.base+"/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": caps}}, &s); err != nil {
		return fmt.Errorf("webkit session: %w; output: %s", err, b.out)
	}
	if s.SessionID == "" {
		return errors.New("webkit session: no session id")
	}
	b.base += "/session/" + s.SessionID
	return nil
}

// Navigate opens url and returns once its load event has fired.
func (b *Browser) Navigate(ctx context.Context, url string) error {
	if err := call(ctx, http.MethodPost, b.base+"/url", map[string]string{"url": url}, nil); err != nil {
		return fmt.Errorf("webkit navigating to %s: %w", url, err)
	}
	return nil
}

// Execute runs script (a function body; arguments in `arguments`) in the
// page and decodes what it returns into out, unless out is nil.
func (b *Browser) Execute(ctx context.Context, script string, out any, args ...any) error {
	return b.execute(ctx, "/execute/sync", script, out, args)
}

// ExecuteAsync runs script, which calls its last argument with the result
// (the W3C "execute async script"), within the session's 30 s script
// timeout.
func (b *Browser) ExecuteAsync(ctx context.Context, script string, out any, args ...any) error {
	return b.execute(ctx, "/execute/async", script, out, args)
}

func (b *Browser) execute(ctx context.Context, path, script string, out any, args []any) error {
	if args == nil {
		args = []any{}
	}
	if err := call(ctx, http.MethodPost, b.base+path, map[string]any{"script": script, "args": args}, out); err != nil {
		return fmt.Errorf("webkit script: %w", err)
	}
	return nil
}

// Output returns the last 8 KiB the driver, browser and Xvfb wrote.
func (b *Browser) Output() string { return b.out.String() }

// Close ends the session (bounded: 5 s), stops the driver's process group
// (the browser and its web and network processes) and Xvfb, and removes
// the browser's directories. It is safe to call more than once.
func (b *Browser) Close() error {
	b.once.Do(func() {
		if b.driver != nil && strings.Contains(b.base, "/session/") {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			call(ctx, http.MethodDelete, b.base, nil, nil) // the kill below is what counts
			cancel()
		}
		b.closeErr = errors.Join(b.killDriver(), b.stopXvfb())
		if err := os.RemoveAll(b.dir); err != nil {
			b.closeErr = errors.Join(b.closeErr, fmt.Errorf("removing webkit directory: %w", err))
		}
	})
	return b.closeErr
}

func (b *Browser) killDriver() error {
	if b.driver == nil {
		return nil
	}
	defer func() { b.driver = nil }()
	return stop(b.driver, b.driverDone, syscall.SIGKILL, "WebKitWebDriver")
}

// stopXvfb asks Xvfb to exit first, so that it removes its lock file and
// socket; SIGKILL would leave them behind.
func (b *Browser) stopXvfb() error {
	if b.xvfb == nil {
		return nil
	}
	syscall.Kill(-b.xvfb.Process.Pid, syscall.SIGTERM)
	select {
	case <-b.xvfbDone:
		return nil
	case <-time.After(5 * time.Second):
	}
	return stop(b.xvfb, b.xvfbDone, syscall.SIGKILL, "Xvfb")
}

// stop signals cmd's whole process group and waits (bounded) for cmd.
func stop(cmd *exec.Cmd, done <-chan struct{}, sig syscall.Signal, name string) error {
	var err error
	if e := syscall.Kill(-cmd.Process.Pid, sig); e != nil && !errors.Is(e, syscall.ESRCH) {
		err = fmt.Errorf("killing %s: %w", name, e)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		err = errors.Join(err, fmt.Errorf("%s did not exit within 10 s of %v", name, sig))
	}
	return err
}

// client talks to the driver on loopback, never through a proxy.
var client = &http.Client{Transport: &http.Transport{Proxy: nil}}

// Error is an error a WebDriver endpoint answered.
type Error struct {
	Status  int
	Code    string // the W3C error code, e.g. "timeout", "javascript error"
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("webdriver: %s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

// call makes one WebDriver request and decodes the answer's "value" into
// out (unless out is nil).
func call(ctx context.Context, method, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("webdriver answered HTTP %d, not JSON: %.200q", resp.StatusCode, data)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		json.Unmarshal(env.Value, &e)
		return &Error{Status: resp.StatusCode, Code: e.Error, Message: e.Message}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Value, out); err != nil {
		return fmt.Errorf("decoding webdriver answer: %w", err)
	}
	return nil
}
