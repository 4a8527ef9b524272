//go:build unix

// Package chromium runs headless Chromium against loopback servers, for
// end-to-end tests of the beacon and the collector.
package chromium

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

// DefaultPath is where Debian installs Chromium (make test installs it).
const DefaultPath = "/usr/bin/chromium"

// Options configure a Chromium run. The zero value is usable.
type Options struct {
	// Path of the Chromium binary; "" means DefaultPath, then "chromium"
	// or "chromium-browser" on $PATH.
	Path string
	// SPKI lists base64 SHA-256 hashes of certificate public keys to trust
	// (see SPKIHash), for self-signed test certificates.
	SPKI []string
	// ForceQUICOn is --origin-to-force-quic-on. "" means "localhost:1": a
	// dummy entry that makes QUIC accept the SPKI-trusted certificate for
	// host "localhost" while HTTP/3 is still discovered through Alt-Svc.
	// Naming a real origin forces QUIC from its first request. "-" omits it.
	ForceQUICOn string
	// HostResolverRules is --host-resolver-rules, e.g. "MAP localhost 127.0.0.1".
	HostResolverRules string
	// DevTools enables the DevTools protocol on a free loopback port
	// (Browser.Pages, ClosePage, Navigate).
	DevTools bool
	// VirtualTimeBudget is DumpDOM's --virtual-time-budget; 0 means 5s.
	// Timings inside the page are quantised to 10 ms under it.
	VirtualTimeBudget time.Duration
	// WindowSize is Screenshot's --window-size; "" means "1280,800".
	WindowSize string
	// Args are appended to the command line.
	Args []string
	// Output receives Chromium's stdout and stderr; nil keeps only the last
	// 8 KiB, which errors quote.
	Output io.Writer
}

// Find returns the Chromium binary to run, or an error that says how to
// install it.
func Find(path string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("chromium at %s: %w", path, err)
		}
		return path, nil
	}
	if _, err := os.Stat(DefaultPath); err == nil {
		return DefaultPath, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("chromium not found at %s nor on $PATH: run `make test` (it installs it) or `apt-get install chromium`", DefaultPath)
}

// Browser is a running headless Chromium in its own process group and
// its own fresh profile directory.
type Browser struct {
	cmd     *exec.Cmd
	dir     string
	out     *tail.Buffer
	done    chan struct{}
	waitErr error

	devtools string // "127.0.0.1:port", when Options.DevTools
	browser  string // DevTools WebSocket URL of the browser target

	closeOnce sync.Once
	closeErr  error
}

// Start launches Chromium on url with opts (and extra flags).
func Start(ctx context.Context, url string, opts Options, extra ...string) (*Browser, error) {
	return start(ctx, url, opts, nil, extra)
}

// start launches Chromium; a non-nil stdout receives its standard output
// apart from the logs.
func start(ctx context.Context, url string, opts Options, stdout io.Writer, extra []string) (*Browser, error) {
	path, err := Find(opts.Path)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "h3rum-chromium-")
	if err != nil {
		return nil, fmt.Errorf("creating chromium profile directory: %w", err)
	}
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-default-browser-check", "--mute-audio",
		"--user-data-dir=" + dir,
	}
	if len(opts.SPKI) > 0 {
		args = append(args, "--ignore-certificate-errors-spki-list="+strings.Join(opts.SPKI, ","))
	}
	switch opts.ForceQUICOn {
	case "":
		args = append(args, "--origin-to-force-quic-on=localhost:1")
	case "-":
	default:
		args = append(args, "--origin-to-force-quic-on="+opts.ForceQUICOn)
	}
	if opts.HostResolverRules != "" {
		args = append(args, "--host-resolver-rules="+opts.HostResolverRules)
	}
	if opts.DevTools {
		args = append(args, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0")
	}
	args = append(args, opts.Args...)
	args = append(args, extra...)
	args = append(args, url)

	b := &Browser{dir: dir, out: &tail.Buffer{Max: 8 << 10}, done: make(chan struct{})}
	b.cmd = exec.Command(path, args...)
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var w io.Writer = b.out
	if opts.Output != nil {
		w = io.MultiWriter(b.out, opts.Output)
	}
	b.cmd.Stdout, b.cmd.Stderr = w, w
	if stdout != nil {
		b.cmd.Stdout = stdout
	}
	if err := b.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	go func() {
		b.waitErr = b.cmd.Wait()
		close(b.done)
	}()
	if opts.DevTools {
		if err := b.awaitDevTools(ctx); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// awaitDevTools waits (bounded by ctx and 15 s) for the DevToolsActivePort
// file Chromium writes once its DevTools server listens.
func (b *Browser) awaitDevTools(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		data, err := os.ReadFile(filepath.Join(b.dir, "DevToolsActivePort"))
		if err == nil {
			port, path, ok := strings.Cut(strings.TrimSpace(string(data)), "\n")
			if _, perr := strconv.Atoi(port); ok && perr == nil {
				b.devtools = "127.0.0.1:" + port
				b.browser = "ws://" + b.devtools + strings.TrimSpace(path)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for chromium's DevTools port: %w; output: %s", ctx.Err(), b.out)
		case <-b.done:
			return fmt.Errorf("chromium exited before DevTools listened (%v); output: %s", b.waitErr, b.out)
		case <-tick.C:
		}
	}
}

// Done is closed when the Chromium process has exited.
func (b *Browser) Done() <-chan struct{} { return b.done }

// Output returns the last 8 KiB Chromium wrote, for diagnostics.
func (b *Browser) Output() string { return b.out.String() }

// Close kills Chromium's whole process group, waits for it (bounded) and
// removes the profile directory. It is safe to call more than once.
func (b *Browser) Close() error {
	b.closeOnce.Do(func() {
		// Negative pid: the group Setpgid made, i.e. every helper process.
		if err := syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			b.closeErr = fmt.Errorf("killing chromium: %w", err)
		}
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			b.closeErr = errors.Join(b.closeErr, errors.New("chromium did not exit 10 s after SIGKILL"))
		}
		if err := os.RemoveAll(b.dir); err != nil {
			b.closeErr = errors.Join(b.closeErr, fmt.Errorf("removing chromium profile: %w", err))
		}
	})
	return b.closeErr
}

// DumpDOM loads url and returns the serialised DOM after the virtual time
// budget (--dump-dom). Asynchronous work may still be pending when it
// returns; for exact results let the page POST them to a test server.
func DumpDOM(ctx context.Context, url string, opts Options) (string, error) {
	budget := opts.VirtualTimeBudget
	if budget <= 0 {
		budget = 5 * time.Second
	}
	var stdout bytes.Buffer
	err := runOnce(ctx, url, opts, &stdout, "--dump-dom", "--virtual-time-budget="+strconv.FormatInt(budget.Milliseconds(), 10))
	if err != nil {
		return "", err
	}
	return stdout.String(), nil
}

// Screenshot loads url and writes a PNG screenshot to file.
func Screenshot(ctx context.Context, url, file string, opts Options) error {
	size := opts.WindowSize
	if size == "" {
		size = "1280,800"
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return fmt.Errorf("screenshot path: %w", err)
	}
	if err := runOnce(ctx, url, opts, nil, "--screenshot="+abs, "--window-size="+size, "--hide-scrollbars"); err != nil {
		return err
	}
	if st, err := os.Stat(abs); err != nil || st.Size() == 0 {
		return fmt.Errorf("chromium wrote no screenshot to %s", abs)
	}
	return nil
}

// runOnce runs a Chromium that exits by itself (--dump-dom, --screenshot),
// bounded by ctx (default 60 s).
func runOnce(ctx context.Context, url string, opts Options, stdout io.Writer, extra ...string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
	}
	o := opts
	o.DevTools = false
	b, err := start(ctx, url, o, stdout, extra)
	if err != nil {
		return err
	}
	defer b.Close()
	select {
	case <-b.done:
	case <-ctx.Done():
		return fmt.Errorf("chromium on %s: %w; output: %s", url, ctx.Err(), b.out)
	}
	if b.waitErr != nil {
		return fmt.Errorf("chromium on %s: %w; output: %s", url, b.waitErr, b.out)
	}
	return nil
}
